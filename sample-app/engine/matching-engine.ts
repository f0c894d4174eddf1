/**
 * The matching engine of one shard: every symbol of the shard, fed the shard's log of commands in
 * order. Deterministic: the same commands (and their instants) give the same trades, trade ids
 * and order states, so a book lost with its process is rebuilt by replaying the log, and a test
 * can compare what the service did with this engine run alone.
 */
import { OrderBook } from './order-book.js';
import type { ApplyResult, Command, Depth, OrderState, PlaceCommand, Trade } from './engine.types.js';

/** At most this many fills per incoming order; a larger sweep cancels the rest (bounds the trades of one log millisecond, see ids.ts). */
export const MAX_FILLS_PER_ORDER = 100;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** The books of one shard and the orders it has seen. */
export class MatchingEngine {
  private readonly books = new Map<string, OrderBook>();
  private readonly orders = new Map<string, Mutable<OrderState>>();
  /** Orders whose cancel came before them (their intake jobs ran in the other order). */
  private readonly cancelledEarly = new Set<string>();
  private inputs = 0;
  private trades = 0;

  constructor(readonly shard: number) {}

  /** How many commands were applied (the next command's position on the log). */
  get position(): number {
    return this.inputs;
  }

  /** How many trades were made so far. */
  get tradeCount(): number {
    return this.trades;
  }

  /** An order's latest state. */
  order(orderId: string): OrderState | undefined {
    const o = this.orders.get(orderId);
    return o ? { ...o } : undefined;
  }

  /** Symbols that have a book. */
  symbols(): string[] {
    return [...this.books.keys()].sort();
  }

  /** The best `levels` levels of each side of a symbol. */
  depth(symbol: string, levels = 10): Depth {
    const b = this.books.get(symbol);
    return { symbol, bids: b ? b.bids.depth(levels) : [], asks: b ? b.asks.depth(levels) : [] };
  }

  /**
   * Applies the next command of the log, which was appended at `at` (epoch ms). A place whose
   * order id was seen before, and a cancel of an order that is no longer resting, change
   * nothing. A cancel that comes before its order (both were sequenced by intake jobs that ran
   * concurrently) is remembered, and the order is cancelled when it arrives.
   */
  apply(cmd: Command, at: number): ApplyResult {
    const seq = this.inputs++;
    if (cmd.kind === 'cancel') return this.cancel(cmd.orderId, seq);
    if (this.orders.has(cmd.orderId)) return { trades: [], orders: [], duplicate: true };
    return this.place(cmd, seq, at);
  }

  private book(symbol: string): OrderBook {
    let b = this.books.get(symbol);
    if (!b) this.books.set(symbol, (b = new OrderBook(symbol)));
    return b;
  }

  private cancel(orderId: string, seq: number): ApplyResult {
    const o = this.orders.get(orderId);
    if (!o) {
      if (this.cancelledEarly.has(orderId)) return { trades: [], orders: [], duplicate: true };
      this.cancelledEarly.add(orderId);
      return { trades: [], orders: [], duplicate: false };
    }
    if (o.status !== 'open' && o.status !== 'partially-filled') return { trades: [], orders: [], duplicate: true };
    this.book(o.symbol).own(o.side).remove(orderId);
    o.status = 'cancelled';
    o.reason = 'cancelled by request';
    o.seq = seq;
    return { trades: [], orders: [{ ...o }], duplicate: false };
  }

  private place(cmd: PlaceCommand, seq: number, at: number): ApplyResult {
    const { kind: _kind, ...placed } = cmd;
    const taker: Mutable<OrderState> = { ...placed, filledQty: 0, filledNotionalTicks: 0, status: 'open', seq };
    this.orders.set(cmd.orderId, taker);
    if (this.cancelledEarly.delete(cmd.orderId)) {
      taker.status = 'cancelled';
      taker.reason = 'cancelled before it reached the book';
      return { trades: [], orders: [{ ...taker }], duplicate: false };
    }
    const book = this.book(cmd.symbol);
    const opposite = book.opposite(cmd.side);
    const buying = cmd.side === 'buy';
    const limit = cmd.type === 'limit' ? cmd.priceTicks! : undefined;
    const crosses = (p: number): boolean => limit === undefined || (buying ? p <= limit : p >= limit);
    const trades: Trade[] = [];
    const touched: OrderState[] = [];
    for (let maker = opposite.best(); taker.filledQty < cmd.qty && maker && crosses(maker.priceTicks); maker = opposite.best()) {
      if (trades.length === MAX_FILLS_PER_ORDER) break;
      const qty = Math.min(cmd.qty - taker.filledQty, maker.remaining);
      const m = this.orders.get(maker.orderId)!;
      trades.push({
        id: `T${this.shard}.${this.trades}`,
        shard: this.shard,
        tradeSeq: this.trades++,
        symbol: cmd.symbol,
        priceTicks: maker.priceTicks,
        qty,
        buyOrderId: buying ? cmd.orderId : maker.orderId,
        sellOrderId: buying ? maker.orderId : cmd.orderId,
        buyAccount: buying ? cmd.account : maker.account,
        sellAccount: buying ? maker.account : cmd.account,
        takerSide: cmd.side,
        at,
        inputSeq: seq,
      });
      taker.filledQty += qty;
      taker.filledNotionalTicks += qty * maker.priceTicks;
      maker.remaining -= qty;
      m.filledQty += qty;
      m.filledNotionalTicks += qty * maker.priceTicks;
      m.status = maker.remaining === 0 ? 'filled' : 'partially-filled';
      m.seq = seq;
      touched.push({ ...m });
      if (maker.remaining === 0) opposite.dropBest();
    }
    const left = cmd.qty - taker.filledQty;
    if (left === 0) taker.status = 'filled';
    else if (cmd.type === 'limit' && trades.length < MAX_FILLS_PER_ORDER) {
      taker.status = taker.filledQty > 0 ? 'partially-filled' : 'open';
      book.own(cmd.side).add({ orderId: cmd.orderId, account: cmd.account, priceTicks: limit!, seq, remaining: left });
    } else {
      taker.status = 'cancelled';
      taker.reason = cmd.type === 'market' ? 'market order: no more liquidity' : `more than ${MAX_FILLS_PER_ORDER} fills`;
    }
    // A maker is touched at most once per taker: it is either used up or it outlasts the taker.
    return { trades, orders: [...touched, { ...taker }], duplicate: false };
  }
}
