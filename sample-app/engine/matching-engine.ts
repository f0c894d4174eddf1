/**
 * The matching engine of one shard: every symbol of the shard, fed the shard's log of commands in
 * order. Deterministic: the same commands (and their instants) give the same trades, trade ids
 * and order states, so a book lost with its process is rebuilt from a snapshot plus the log after
 * it, and a test can compare what the service did with this engine run alone.
 *
 * Money is exact: prices and notionals are `bigint` ticks inside, decimal strings outside.
 *
 * Memory is bounded by what rests on the books plus the ids of the last hour: an order that ends
 * (filled, cancelled) is forgotten, except its id, which is remembered until `SEEN_HORIZON_MS`
 * after the order was accepted so that a repeated place (an intake job re-run) is recognised. A
 * place that reaches the book later than that is refused as stale instead (cancelled with a
 * `stale: …` reason): past the horizon the engine could no longer tell it from a repeat.
 */
import { OrderBook, type Resting } from './order-book.js';
import type { ApplyResult, Command, Depth, OrderState, OrderStatus, PlaceCommand, Trade } from './engine.types.js';
import { notional, ticksFromWire, ticksToWire } from './money.js';

/** At most this many fills per incoming order; a larger sweep cancels the rest (bounds the trades of one log millisecond, see ids.ts). */
export const MAX_FILLS_PER_ORDER = 100;

/** How long (ms) an order id is remembered after its acceptance; a place older than this on arrival is refused. */
export const SEEN_HORIZON_MS = 3_600_000;

/** The reason of a place refused because it reached the book too late. */
export const STALE_REASON = 'stale: accepted more than 1 h before it reached the book';
/** The reason of a place whose acceptance time lies more than the horizon after its log time (a wrong clock). */
export const FUTURE_REASON = 'stale: accepted more than 1 h after it reached the book (clock skew)';

/** How often (log time, ms) expired ids are dropped. */
const PRUNE_EVERY_MS = 1000;

/** One resting order in a snapshot: its latest state and its arrival position (its time priority). */
export type RestingSnapshot = {
  readonly order: OrderState;
  readonly arrival: number;
};

/**
 * Everything the engine needs to carry on exactly as if it had applied the log up to `position`:
 * JSON-safe (no bigint: ticks are decimal strings), so it can be stored as it is.
 */
export type EngineSnapshot = {
  /** Format version. */
  readonly v: 1;
  readonly shard: number;
  /** The next log position (commands applied so far). */
  readonly position: number;
  /** Trades made so far (the next trade's number). */
  readonly trades: number;
  /** Log time (ms) at or after which the next prune of expired ids runs. */
  readonly pruneAt: number;
  /** Every book, by symbol; each side's resting orders worst first. */
  readonly books: { readonly symbol: string; readonly bids: RestingSnapshot[]; readonly asks: RestingSnapshot[] }[];
  /** Ids of orders that ended within the horizon, with when they may be forgotten (ms), in insertion order. */
  readonly seen: [string, number][];
  /** Cancels that came before their order, with when they may be forgotten (ms), in insertion order. */
  readonly cancelledEarly: [string, number][];
};

/** An order on a book: what the book needs to rank it, and what the engine reports of it. */
interface Live extends Resting {
  readonly placed: Omit<PlaceCommand, 'kind'>;
  filledQty: number;
  filledNotional: bigint;
  /** Position of the last command that changed it. */
  lastSeq: number;
}

const stateOf = (o: Live): OrderState => ({
  ...o.placed,
  filledQty: o.filledQty,
  filledNotionalTicks: ticksToWire(o.filledNotional),
  status: o.filledQty > 0 ? 'partially-filled' : 'open',
  seq: o.lastSeq,
});

/** True when `m` holds `id` with an expiry at or after `now` (an expired entry not yet dropped counts as gone). */
const holds = (m: ReadonlyMap<string, number>, id: string, now: number): boolean => (m.get(id) ?? -Infinity) >= now;

/** Drops the entries of an insertion-ordered map from the front while they expired before `now`. */
function pruneFront(m: Map<string, number>, now: number): void {
  for (const [k, expires] of m) {
    if (expires >= now) return;
    m.delete(k);
  }
}

/** The books of one shard, the orders resting on them, and the ids it has recently seen. */
export class MatchingEngine {
  private readonly books = new Map<string, OrderBook>();
  /** Resting orders by id. */
  private readonly live = new Map<string, Live>();
  /** Ids of ended orders, until their horizon passes (insertion order ≈ expiry order). */
  private readonly seen = new Map<string, number>();
  /** Orders whose cancel came before them (their intake jobs ran in the other order), until the horizon. */
  private readonly cancelledEarly = new Map<string, number>();
  private inputs = 0;
  private trades = 0;
  private pruneAt = 0;

  constructor(readonly shard: number) {}

  /** An engine carrying on from `snap` (taken by `snapshot()` of shard `shard`'s engine). */
  static restore(shard: number, snap: EngineSnapshot): MatchingEngine {
    if (snap.v !== 1) throw new Error(`unknown engine snapshot version ${String(snap.v)}`);
    if (snap.shard !== shard) throw new Error(`snapshot of shard ${snap.shard} given to shard ${shard}`);
    const e = new MatchingEngine(shard);
    e.inputs = snap.position;
    e.trades = snap.trades;
    e.pruneAt = snap.pruneAt;
    for (const b of snap.books) {
      const book = e.book(b.symbol);
      for (const [side, list] of [[book.bids, b.bids], [book.asks, b.asks]] as const) {
        for (const { order: s, arrival } of list) {
          const { filledQty, filledNotionalTicks, status: _status, seq, reason: _reason, ...placed } = s;
          const o: Live = {
            orderId: s.orderId,
            account: s.account,
            priceTicks: ticksFromWire(s.priceTicks ?? ''),
            seq: arrival,
            remaining: s.qty - filledQty,
            placed,
            filledQty,
            filledNotional: ticksFromWire(filledNotionalTicks),
            lastSeq: seq,
          };
          side.push(o);
          e.live.set(o.orderId, o);
        }
      }
    }
    for (const [id, expires] of snap.seen) e.seen.set(id, expires);
    for (const [id, expires] of snap.cancelledEarly) e.cancelledEarly.set(id, expires);
    return e;
  }

  /** Everything needed to carry on from here (see `restore`); JSON-safe. */
  snapshot(): EngineSnapshot {
    const side = (list: readonly Resting[]): RestingSnapshot[] =>
      list.map((r) => {
        const o = this.live.get(r.orderId)!;
        return { order: stateOf(o), arrival: o.seq };
      });
    return {
      v: 1,
      shard: this.shard,
      position: this.inputs,
      trades: this.trades,
      pruneAt: this.pruneAt,
      books: [...this.books.values()].map((b) => ({ symbol: b.symbol, bids: side(b.bids.list()), asks: side(b.asks.list()) })),
      seen: [...this.seen],
      cancelledEarly: [...this.cancelledEarly],
    };
  }

  /** How many commands were applied (the next command's position on the log). */
  get position(): number {
    return this.inputs;
  }

  /** How many trades were made so far. */
  get tradeCount(): number {
    return this.trades;
  }

  /** What the engine holds: resting orders, remembered order ids, early cancels. */
  get sizes(): { resting: number; seen: number; cancelledEarly: number } {
    return { resting: this.live.size, seen: this.seen.size, cancelledEarly: this.cancelledEarly.size };
  }

  /** A resting order's latest state (an ended order is forgotten: its last state was in the `ApplyResult`). */
  order(orderId: string): OrderState | undefined {
    const o = this.live.get(orderId);
    return o ? stateOf(o) : undefined;
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
   * order id was seen within the horizon, and a cancel of an order that is no longer resting,
   * change nothing. A place accepted more than the horizon before `at` is cancelled as stale. A
   * cancel that comes before its order (both were sequenced by intake jobs that ran concurrently)
   * is remembered, and the order is cancelled when it arrives.
   */
  apply(cmd: Command, at: number): ApplyResult {
    const seq = this.inputs++;
    if (at >= this.pruneAt) {
      pruneFront(this.seen, at);
      pruneFront(this.cancelledEarly, at);
      this.pruneAt = at + PRUNE_EVERY_MS;
    }
    if (cmd.kind === 'cancel') return this.cancel(cmd.orderId, seq, at);
    if (this.live.has(cmd.orderId) || holds(this.seen, cmd.orderId, at)) return { trades: [], orders: [], duplicate: true };
    return this.place(cmd, seq, at);
  }

  /** Remembers the id of an order that ended at `at`, until its horizon (not at all when that is past). */
  private remember(placed: Omit<PlaceCommand, 'kind'>, at: number): void {
    const expires = placed.acceptedAt + SEEN_HORIZON_MS;
    if (expires >= at) this.seen.set(placed.orderId, expires);
  }

  private book(symbol: string): OrderBook {
    let b = this.books.get(symbol);
    if (!b) this.books.set(symbol, (b = new OrderBook(symbol)));
    return b;
  }

  private cancel(orderId: string, seq: number, at: number): ApplyResult {
    const o = this.live.get(orderId);
    if (!o) {
      if (holds(this.seen, orderId, at) || holds(this.cancelledEarly, orderId, at)) return { trades: [], orders: [], duplicate: true };
      this.cancelledEarly.set(orderId, at + SEEN_HORIZON_MS);
      return { trades: [], orders: [], duplicate: false };
    }
    this.book(o.placed.symbol).own(o.placed.side).remove(o);
    this.live.delete(orderId);
    this.remember(o.placed, at);
    o.lastSeq = seq;
    return { trades: [], orders: [{ ...stateOf(o), status: 'cancelled', reason: 'cancelled by request' }], duplicate: false };
  }

  private place(cmd: PlaceCommand, seq: number, at: number): ApplyResult {
    const { kind: _kind, ...placed } = cmd;
    const final = (status: OrderStatus, filledQty: number, filled: bigint, reason?: string): OrderState => ({
      ...placed,
      filledQty,
      filledNotionalTicks: ticksToWire(filled),
      status,
      seq,
      ...(reason === undefined ? {} : { reason }),
    });
    const stale = at - cmd.acceptedAt > SEEN_HORIZON_MS ? STALE_REASON : cmd.acceptedAt - at > SEEN_HORIZON_MS ? FUTURE_REASON : undefined;
    if (stale) return { trades: [], orders: [final('cancelled', 0, 0n, stale)], duplicate: false };
    const early = holds(this.cancelledEarly, cmd.orderId, at);
    this.cancelledEarly.delete(cmd.orderId);
    if (early) {
      this.remember(placed, at);
      return { trades: [], orders: [final('cancelled', 0, 0n, 'cancelled before it reached the book')], duplicate: false };
    }
    const book = this.book(cmd.symbol);
    const opposite = book.opposite(cmd.side);
    const buying = cmd.side === 'buy';
    const limit = cmd.type === 'limit' && cmd.priceTicks !== undefined ? ticksFromWire(cmd.priceTicks) : undefined;
    const crosses = (p: bigint): boolean => limit === undefined || (buying ? p <= limit : p >= limit);
    const trades: Trade[] = [];
    const touched: OrderState[] = [];
    let filledQty = 0;
    let filled = 0n;
    for (let best = opposite.best(); filledQty < cmd.qty && best && crosses(best.priceTicks); best = opposite.best()) {
      if (trades.length === MAX_FILLS_PER_ORDER) break;
      const m = this.live.get(best.orderId)!;
      const qty = Math.min(cmd.qty - filledQty, m.remaining);
      const value = notional(m.priceTicks, qty);
      trades.push({
        id: `T${this.shard}.${this.trades}`,
        shard: this.shard,
        tradeSeq: this.trades++,
        symbol: cmd.symbol,
        priceTicks: ticksToWire(m.priceTicks),
        qty,
        notionalTicks: ticksToWire(value),
        buyOrderId: buying ? cmd.orderId : m.orderId,
        sellOrderId: buying ? m.orderId : cmd.orderId,
        buyAccount: buying ? cmd.account : m.account,
        sellAccount: buying ? m.account : cmd.account,
        takerSide: cmd.side,
        at,
        inputSeq: seq,
      });
      filledQty += qty;
      filled += value;
      m.remaining -= qty;
      m.filledQty += qty;
      m.filledNotional += value;
      m.lastSeq = seq;
      if (m.remaining > 0) touched.push(stateOf(m));
      else {
        opposite.dropBest();
        this.live.delete(m.orderId);
        this.remember(m.placed, at);
        touched.push({ ...stateOf(m), status: 'filled' });
      }
    }
    const left = cmd.qty - filledQty;
    let taker: OrderState;
    if (left === 0) {
      this.remember(placed, at);
      taker = final('filled', filledQty, filled);
    }
    else if (limit !== undefined && trades.length < MAX_FILLS_PER_ORDER) {
      const o: Live = { orderId: cmd.orderId, account: cmd.account, priceTicks: limit, seq, remaining: left, placed, filledQty, filledNotional: filled, lastSeq: seq };
      book.own(cmd.side).add(o);
      this.live.set(cmd.orderId, o);
      taker = stateOf(o);
    } else {
      this.remember(placed, at);
      taker = final('cancelled', filledQty, filled, cmd.type === 'market' ? 'market order: no more liquidity' : `more than ${MAX_FILLS_PER_ORDER} fills`);
    }
    // A maker is touched at most once per taker: it is either used up or it outlasts the taker.
    return { trades, orders: [...touched, taker], duplicate: false };
  }
}
