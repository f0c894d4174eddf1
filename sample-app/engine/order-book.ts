/**
 * One symbol's limit order book: price-time priority, kept as two sorted sides. Pure (no I/O, no
 * clock), so the same commands always give the same book.
 */
import type { DepthLevel, Side } from './engine.types.js';
import { ticksToWire } from './money.js';

/** An order resting on the book. */
export interface Resting {
  readonly orderId: string;
  readonly account: string;
  readonly priceTicks: bigint;
  /** Arrival position on the shard's log: the time in price-time priority. */
  readonly seq: number;
  remaining: number;
}

/** One side, sorted worst-first so the best order is at the end (O(1) to take). */
export class BookSide {
  private readonly orders: Resting[] = [];

  /** `bid` ranks higher prices first, `ask` lower prices first; equal prices by arrival. */
  constructor(readonly kind: 'bid' | 'ask') {}

  private better(a: Resting, b: Resting): boolean {
    if (a.priceTicks !== b.priceTicks) return this.kind === 'bid' ? a.priceTicks > b.priceTicks : a.priceTicks < b.priceTicks;
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

  /** Where `o` ranks: the index of the first order that is not worse than `o` (`o` itself when it is here). */
  private rank(o: Resting): number {
    let lo = 0;
    let hi = this.orders.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.better(o, this.orders[mid])) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Inserts by priority (binary search; a newer order goes behind older ones at its price). */
  add(o: Resting): void {
    this.orders.splice(this.rank(o), 0, o);
  }

  /** Removes a resting order (found by its price and arrival); true when it was on this side. */
  remove(o: Resting): boolean {
    const i = this.rank(o);
    if (this.orders[i]?.orderId !== o.orderId) return false;
    this.orders.splice(i, 1);
    return true;
  }

  /** The best `levels` price levels, best first. */
  depth(levels: number): DepthLevel[] {
    const out: { price: bigint; qty: number; orders: number }[] = [];
    for (let i = this.orders.length - 1; i >= 0 && out.length <= levels; i--) {
      const o = this.orders[i];
      const last = out[out.length - 1];
      if (last && last.price === o.priceTicks) {
        last.qty += o.remaining;
        last.orders++;
      } else out.push({ price: o.priceTicks, qty: o.remaining, orders: 1 });
    }
    return out.slice(0, levels).map((l) => ({ priceTicks: ticksToWire(l.price), qty: l.qty, orders: l.orders }));
  }

  /** Every resting order, worst first (the order `restore` takes them back in). */
  list(): readonly Resting[] {
    return this.orders;
  }

  /** Appends an order that ranks at or above every order on this side (restoring a snapshot). */
  push(o: Resting): void {
    const top = this.best();
    if (top && this.better(top, o)) throw new Error(`order ${o.orderId} is out of priority order`);
    this.orders.push(o);
  }

  /** Number of resting orders. */
  get size(): number {
    return this.orders.length;
  }
}

/** The two sides of one symbol. */
export class OrderBook {
  readonly bids = new BookSide('bid');
  readonly asks = new BookSide('ask');

  constructor(readonly symbol: string) {}

  /** The side an order of `side` rests on. */
  own(side: Side): BookSide {
    return side === 'buy' ? this.bids : this.asks;
  }

  /** The side an order of `side` matches against. */
  opposite(side: Side): BookSide {
    return side === 'buy' ? this.asks : this.bids;
  }
}
