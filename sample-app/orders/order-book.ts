/**
 * A tiny in-memory limit order book: one book per symbol, price-time priority, fills at the
 * resting (maker) order's price. No Nest and no I/O here, so it can grow into a matching engine.
 *
 * Limits of the sample: the books live in one process's memory (a restart forgets resting
 * orders, and several app instances would each hold their own books).
 */

/** Which way an order trades. */
export type Side = 'buy' | 'sell';

/** A limit order as the book receives it. `id` is unique (the job id). */
export interface LimitOrder {
  readonly id: string;
  readonly account: string;
  readonly side: Side;
  readonly symbol: string;
  /** Whole units, > 0. */
  readonly qty: number;
  /** Limit price, > 0. */
  readonly price: number;
}

/** One execution between an incoming (taker) order and a resting (maker) order. */
export interface Fill {
  readonly symbol: string;
  readonly price: number;
  readonly qty: number;
  readonly buyOrderId: string;
  readonly sellOrderId: string;
  readonly buyAccount: string;
  readonly sellAccount: string;
  /** The resting order that provided the liquidity. */
  readonly makerOrderId: string;
}

/** What submitting one order did. */
export interface MatchOutcome {
  readonly orderId: string;
  readonly fills: Fill[];
  readonly filledQty: number;
  /** Quantity left unfilled, now resting on the book (0 when fully filled). */
  readonly restingQty: number;
}

interface Resting {
  readonly id: string;
  readonly account: string;
  readonly price: number;
  /** Arrival order: the time in price-time priority. */
  readonly seq: number;
  remaining: number;
}

/**
 * One side of a book, kept sorted worst-first so the best order is at the end (O(1) to take).
 * `better(a, b)` is true when `a` has priority over `b`.
 */
class BookSide {
  private readonly orders: Resting[] = [];

  constructor(private readonly betterPrice: (a: number, b: number) => boolean) {}

  private better(a: Resting, b: Resting): boolean {
    if (a.price !== b.price) return this.betterPrice(a.price, b.price);
    return a.seq < b.seq;
  }

  /** The order with the highest priority, if any. */
  best(): Resting | undefined {
    return this.orders[this.orders.length - 1];
  }

  /** Removes the best order. */
  dropBest(): void {
    this.orders.pop();
  }

  /** Inserts by priority (binary search; a newer order goes behind older ones at its price). */
  add(o: Resting): void {
    let lo = 0;
    let hi = this.orders.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.better(o, this.orders[mid])) lo = mid + 1;
      else hi = mid;
    }
    this.orders.splice(lo, 0, o);
  }
}

/** The book of one symbol. */
export class OrderBook {
  private readonly bids = new BookSide((a, b) => a > b);
  private readonly asks = new BookSide((a, b) => a < b);
  private seq = 0;

  constructor(readonly symbol: string) {}

  /** Matches `order` against the opposite side, then rests what is left. */
  submit(order: LimitOrder): MatchOutcome {
    const buying = order.side === 'buy';
    const opposite = buying ? this.asks : this.bids;
    const crosses = (restingPrice: number) => (buying ? restingPrice <= order.price : restingPrice >= order.price);
    const fills: Fill[] = [];
    let remaining = order.qty;
    for (let maker = opposite.best(); remaining > 0 && maker && crosses(maker.price); maker = opposite.best()) {
      const qty = Math.min(remaining, maker.remaining);
      fills.push({
        symbol: this.symbol,
        price: maker.price,
        qty,
        buyOrderId: buying ? order.id : maker.id,
        sellOrderId: buying ? maker.id : order.id,
        buyAccount: buying ? order.account : maker.account,
        sellAccount: buying ? maker.account : order.account,
        makerOrderId: maker.id,
      });
      remaining -= qty;
      maker.remaining -= qty;
      if (maker.remaining === 0) opposite.dropBest();
    }
    if (remaining > 0) {
      (buying ? this.bids : this.asks).add({ id: order.id, account: order.account, price: order.price, seq: this.seq++, remaining });
    }
    return { orderId: order.id, fills, filledQty: order.qty - remaining, restingQty: remaining };
  }
}

/** How many outcomes are remembered for idempotent re-submission. */
const REMEMBERED_OUTCOMES = 10_000;

/**
 * Every symbol's book. Submitting the same order id twice (a re-delivered job) returns the first
 * outcome instead of matching again, for the most recent 10,000 orders.
 */
export class OrderBooks {
  private readonly books = new Map<string, OrderBook>();
  private readonly outcomes = new Map<string, MatchOutcome>();

  /** Matches one order on its symbol's book (created on first use). */
  submit(order: LimitOrder): MatchOutcome {
    const seen = this.outcomes.get(order.id);
    if (seen) return seen;
    let book = this.books.get(order.symbol);
    if (!book) {
      book = new OrderBook(order.symbol);
      this.books.set(order.symbol, book);
    }
    const outcome = book.submit(order);
    this.outcomes.set(order.id, outcome);
    if (this.outcomes.size > REMEMBERED_OUTCOMES) {
      const oldest = this.outcomes.keys().next();
      if (!oldest.done) this.outcomes.delete(oldest.value);
    }
    return outcome;
  }
}
