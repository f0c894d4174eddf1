/**
 * One symbol's limit order book: price-time priority, kept as two sorted sides. Pure (no I/O, no
 * clock), so the same commands always give the same book.
 */
import type { DepthLevel, Side } from './engine.types.js';

/** An order resting on the book. */
export interface Resting {
  readonly orderId: string;
  readonly account: string;
  readonly priceTicks: number;
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

  /** Removes a resting order by id; returns it, or undefined when it is not on this side. */
  remove(orderId: string): Resting | undefined {
    const i = this.orders.findIndex((o) => o.orderId === orderId);
    if (i < 0) return undefined;
    return this.orders.splice(i, 1)[0];
  }

  /** The best `levels` price levels, best first. */
  depth(levels: number): DepthLevel[] {
    const out: DepthLevel[] = [];
    for (let i = this.orders.length - 1; i >= 0 && out.length <= levels; i--) {
      const o = this.orders[i];
      const last = out[out.length - 1];
      if (last && last.priceTicks === o.priceTicks) out[out.length - 1] = { priceTicks: o.priceTicks, qty: last.qty + o.remaining, orders: last.orders + 1 };
      else out.push({ priceTicks: o.priceTicks, qty: o.remaining, orders: 1 });
    }
    return out.slice(0, levels);
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
