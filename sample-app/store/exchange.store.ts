import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import type { Redis } from 'iovalkey';
import type { Depth, OrderState, Trade } from '../engine/engine.types.js';
import type { EngineSnapshot } from '../engine/matching-engine.js';
import { ticksFromWire, ticksToWire } from '../engine/money.js';
import { storeClient } from './store.client.js';
import { latencies, LATENCIES_KEPT, recordSettlement } from './stats.store.js';
import { CANDLE, RISK } from './store.scripts.js';
import { fund, markSequenced, readLedger, releaseEnded, reserve, settle, settledCount, sweep, unclaim, unsequenced, type LedgerAccount, type ReservationRequest, type ReserveOutcome } from './ledger.store.js';
import { CLAIM, FENCED_RAISE, FENCED_SNAPSHOT, VIEWS } from './shard.scripts.js';

/** The injection token of the store's Valkey URL. */
export const STORE_URL = Symbol('STORE_URL');

/** Candle intervals, in ms: 1 s and 1 min. */
export const CANDLE_INTERVALS = [1000, 60_000] as const;
/** How long candles are kept, per interval (1 h of 1 s candles, 1 day of 1 min candles). */
const CANDLE_TTL_MS: Readonly<Record<number, number>> = { 1000: 3_600_000, 60_000: 86_400_000 };
/** How long a client order id is remembered for idempotent placement. */
export const CLIENT_ID_TTL_S = 7 * 24 * 3600;

/** One candle: prices and notional in ticks as decimal strings (a type, so it is `Json`). */
export type Candle = {
  /** The bucket's start, epoch ms. */
  readonly start: number;
  readonly open: string;
  readonly high: string;
  readonly low: string;
  readonly close: string;
  /** Units traded. */
  readonly volume: number;
  /** Σ price × qty of its trades, in ticks (exact: summed as 64-bit integers). */
  readonly notionalTicks: string;
  readonly trades: number;
};


/** An account's risk view from the trade stream (before settlement): net units, notional traded. */
export interface Exposure {
  readonly units: Record<string, number>;
  /** Σ notional bought − sold, in ticks (exact). */
  readonly netNotionalTicks: bigint;
  /** Σ notional traded, in ticks (exact). */
  readonly grossNotionalTicks: bigint;
}

const K = {
  clientId: (account: string, clientOrderId: string) => `x:{coid}:${account}:${clientOrderId}`,
  view: (orderId: string) => `x:{orders}:v:${orderId}`,
  cursor: (shard: number) => `x:{book:${shard}}:cursor`,
  fence: (shard: number) => `x:{book:${shard}}:fence`,
  snapshot: (shard: number) => `x:{book:${shard}}:snap`,
  depth: 'x:{books}:depth',
  candle: (symbol: string, iv: number, start: number) => `x:{md:${symbol}}:c:${iv}:${start}`,
  candleSeen: (symbol: string, iv: number, start: number) => `x:{md:${symbol}}:s:${iv}:${start}`,
  candleIndex: (symbol: string, iv: number) => `x:{md:${symbol}}:i:${iv}`,
  riskSeen: 'x:{risk}:seen',
  risk: (account: string) => `x:{risk}:acct:${account}`,
  riskAccounts: 'x:{risk}:accounts',
};

/** How long the view of an ended order (filled, cancelled) is kept: 24 h. */
export const VIEW_TTL_MS = 86_400_000;

/** A shard's snapshot: the engine at a log position, and where on the log that position is. */
export interface ShardSnapshot {
  /** The engine after the command at `lastId` (its `position` is the next command's). */
  readonly engine: EngineSnapshot;
  /** The stream id of the last command applied (a rebuild replays the log after it). */
  readonly lastId: string;
  /** That command's log time (ms). */
  readonly lastAt: number;
  /** When the snapshot was taken (ms) and by which token. */
  readonly takenAt: number;
  readonly token: string;
}

/** A write of a shard's state by a holder whose lease a newer holder has taken (code EMQ_STALE_TOKEN). */
export class StaleTokenError extends Error {
  readonly code = 'EMQ_STALE_TOKEN';
}

/** Runs a fenced script, turning its refusal into a `StaleTokenError`. */
async function fenced(run: Promise<unknown>): Promise<unknown> {
  try {
    return await run;
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('EMQ_STALE_TOKEN')) throw new StaleTokenError(err.message);
    throw err;
  }
}


/** Splits `u:<SYM>` fields of a hash into a units record. */
function unitsOf(h: Record<string, string>): Record<string, number> {
  const units: Record<string, number> = {};
  for (const [f, v] of Object.entries(h)) if (f.startsWith('u:') && Number(v) !== 0) units[f.slice(2)] = Number(v);
  return units;
}

/**
 * The exchange's own database, kept in Valkey with a plain client (a real exchange would use its
 * SQL database here): client order ids, order views, holder cursors, depth snapshots, the ledger
 * and the market-data projections. EchoMQ carries the work; this holds the application's state.
 */
@Injectable()
export class ExchangeStore implements OnApplicationShutdown {
  /** The client (also used by tests to inspect state). */
  readonly client: Redis;

  constructor(@Inject(STORE_URL) url: string) {
    // Fails fast while Valkey is down (→ 503), logs an outage once (store.client.ts).
    this.client = storeClient(url);
  }

  /**
   * Claims `account`/`clientOrderId` for `orderId` with `fingerprint` (the request's content), or
   * returns the earlier claim. Remembered for 7 days.
   */
  async claimClientOrderId(account: string, clientOrderId: string, orderId: string, fingerprint: string): Promise<{ orderId: string; fingerprint: string }> {
    const old = await this.client.set(K.clientId(account, clientOrderId), `${orderId} ${fingerprint}`, 'EX', CLIENT_ID_TTL_S, 'NX', 'GET');
    if (old === null) return { orderId, fingerprint };
    const sp = old.indexOf(' ');
    return { orderId: old.slice(0, sp), fingerprint: old.slice(sp + 1) };
  }

  /**
   * Stores order states newer than the stored ones (one key per order); the view of an ended
   * order (filled, cancelled) expires `ttlMs` after its last write.
   */
  async writeViews(states: readonly OrderState[], ttlMs = VIEW_TTL_MS): Promise<void> {
    for (let i = 0; i < states.length; i += 500) {
      const batch = states.slice(i, i + 500);
      const args = batch.flatMap((s) => [JSON.stringify(s), s.status === 'filled' || s.status === 'cancelled' ? '1' : '0']);
      await VIEWS.run(this.client, batch.map((s) => K.view(s.orderId)), [ttlMs, ...args]);
    }
  }

  /** An order's latest stored state (none once an ended order's view expired). */
  async view(orderId: string): Promise<OrderState | undefined> {
    const raw = await this.client.get(K.view(orderId));
    return raw ? (JSON.parse(raw) as OrderState) : undefined;
  }

  /** The log position up to which shard `shard`'s effects are done (−1: none). */
  async cursor(shard: number): Promise<number> {
    return Number((await this.client.get(K.cursor(shard))) ?? -1);
  }

  /**
   * Opens a term of shard `shard` for the holder of `token`: raises the shard's fence to it, so
   * a holder with an older token is refused from now on (`StaleTokenError` when a newer one has
   * claimed it already).
   */
  async claimShard(shard: number, token: bigint): Promise<void> {
    await fenced(CLAIM.run(this.client, [K.fence(shard)], [token.toString()]));
  }

  /**
   * Records that the effects of commands up to position `n` are done (never moves back); refused
   * with `StaleTokenError` when a holder with a newer token has written.
   */
  async raiseCursor(shard: number, token: bigint, n: number): Promise<void> {
    await fenced(FENCED_RAISE.run(this.client, [K.fence(shard), K.cursor(shard)], [token.toString(), n]));
  }

  /**
   * Stores shard `shard`'s snapshot unless a newer one (a later log position) is stored; refused
   * with `StaleTokenError` when a holder with a newer token has written. True when written.
   */
  async writeSnapshot(shard: number, token: bigint, snap: ShardSnapshot): Promise<boolean> {
    const doc = JSON.stringify(snap);
    return (await fenced(FENCED_SNAPSHOT.run(this.client, [K.fence(shard), K.snapshot(shard)], [token.toString(), snap.engine.position, doc]))) === 1;
  }

  /** Shard `shard`'s latest snapshot, if any. */
  async snapshot(shard: number): Promise<ShardSnapshot | undefined> {
    const doc = await this.client.hget(K.snapshot(shard), 'doc');
    return doc ? (JSON.parse(doc) as ShardSnapshot) : undefined;
  }

  /** Stores the depth snapshots of some symbols; a symbol whose book is empty is dropped. */
  async setDepth(depths: readonly Depth[]): Promise<void> {
    const full = depths.filter((d) => d.bids.length > 0 || d.asks.length > 0);
    const empty = depths.filter((d) => d.bids.length === 0 && d.asks.length === 0).map((d) => d.symbol);
    if (full.length > 0) await this.client.hset(K.depth, Object.fromEntries(full.map((d) => [d.symbol, JSON.stringify(d)])));
    if (empty.length > 0) await this.client.hdel(K.depth, ...empty);
  }

  /** The latest depth snapshots of `symbols` (the listed ones: nothing else is read), those that have one, sorted by symbol. */
  async depths(symbols: readonly string[]): Promise<Depth[]> {
    const sorted = [...symbols].sort();
    if (sorted.length === 0) return [];
    const raw = await this.client.hmget(K.depth, ...sorted);
    return raw.flatMap((r) => (r === null ? [] : [JSON.parse(r) as Depth]));
  }

  /**
   * Moves cash and units of one trade and releases the filled part of both orders'
   * reservations, once per trade id; true when this call moved them (ledger.store.ts).
   */
  settle(t: Trade): Promise<boolean> {
    return settle(this.client, t);
  }

  /** How many trades the ledger settled. */
  settledCount(): Promise<number> {
    return settledCount(this.client);
  }

  /** Funds an account with its opening balances once; true when this call funded it. */
  fund(account: string, cashTicks: bigint, units: Readonly<Record<string, bigint>>): Promise<boolean> {
    return fund(this.client, account, cashTicks, units);
  }

  /** Reserves cash or units for an order before it is enqueued, once per order id. */
  reserve(r: ReservationRequest): Promise<ReserveOutcome> {
    return reserve(this.client, r);
  }

  /**
   * The intake's check before sequencing a placement: true when order entry reserved for
   * `orderId` (then marked sequenced, so the sweeper leaves it), false when it did not.
   */
  markSequenced(orderId: string): Promise<boolean> {
    return markSequenced(this.client, orderId);
  }

  /** Up to `limit` orders that reserved before `before` (ms) and were never sequenced, oldest first. */
  unsequenced(before: number, limit = 500): Promise<string[]> {
    return unsequenced(this.client, before, limit);
  }

  /** Releases the reservations of orders that never reached the intake (see `ReservationSweeper`). */
  sweep(orderIds: readonly string[]): Promise<{ released: number; accounts: string[] }> {
    return sweep(this.client, orderIds);
  }

  /** Frees a client order id claimed for `orderId` by a placement that was then refused. */
  releaseClientOrderId(account: string, clientOrderId: string, orderId: string): Promise<void> {
    return unclaim(this.client, K.clientId(account, clientOrderId), orderId);
  }

  /**
   * Releases the unfilled rest of the reservations of the ended orders among `states`, once per
   * order id (the shard's holder calls it with each batch's order states), then tells the
   * `onLedgerMoved` listeners which accounts moved.
   */
  async releaseEnded(states: readonly OrderState[]): Promise<void> {
    const accounts = await releaseEnded(this.client, states);
    if (accounts.length > 0) for (const fn of this.ledgerListeners) await fn(accounts);
  }

  private readonly ledgerListeners: ((accounts: string[]) => Promise<void>)[] = [];

  /** Calls `fn` with the accounts whose reservations `releaseEnded` moved (e.g. to evict cached positions). */
  onLedgerMoved(fn: (accounts: string[]) => Promise<void>): void {
    this.ledgerListeners.push(fn);
  }

  /**
   * Records the latency of `tradeId`'s settlement (trade → settled, ms) unless it has one: the
   * step calls it on every run, so a re-run after a crash still counts once (stats.store.ts).
   */
  recordSettlement(tradeId: string, ms: number): Promise<boolean> {
    return recordSettlement(this.client, tradeId, ms);
  }

  /** The newest `count` settlement latencies (ms), newest first. */
  latencies(count = LATENCIES_KEPT): Promise<number[]> {
    return latencies(this.client, count);
  }

  /** An account as the ledger holds it: cash, units and what open orders reserve, exact. */
  holdings(account: string): Promise<LedgerAccount> {
    return readLedger(this.client, account);
  }

  /** Folds a trade into its symbol's candles (idempotent per trade id), every interval in one call. */
  async foldCandle(t: Trade): Promise<void> {
    const starts = CANDLE_INTERVALS.map((iv) => Math.floor(t.at / iv) * iv);
    const keys = CANDLE_INTERVALS.flatMap((iv, i) => [K.candle(t.symbol, iv, starts[i]), K.candleSeen(t.symbol, iv, starts[i]), K.candleIndex(t.symbol, iv)]);
    const args = CANDLE_INTERVALS.flatMap((iv, i) => [starts[i], CANDLE_TTL_MS[iv]]);
    await CANDLE.run(this.client, keys, [t.id, t.tradeSeq, t.priceTicks, t.qty, t.notionalTicks, ...args]);
  }

  /** The newest `count` candles of a symbol at interval `iv` (ms), oldest first. */
  async candles(symbol: string, iv: number, count = 60): Promise<Candle[]> {
    const idx = K.candleIndex(symbol, iv);
    await this.client.zremrangebyscore(idx, '-inf', Date.now() - CANDLE_TTL_MS[iv]);
    const starts = (await this.client.zrevrange(idx, 0, count - 1)).map(Number).reverse();
    const rows = await Promise.all(starts.map((s) => this.client.hgetall(K.candle(symbol, iv, s))));
    return rows.flatMap((h, i) =>
      h.o === undefined
        ? []
        : [{ start: starts[i], open: h.o, high: h.h, low: h.l, close: h.c, volume: Number(h.v), notionalTicks: h.q ?? '0', trades: Number(h.n) }],
    );
  }

  /** Deletes a symbol's candles (to show a rebuild by replay). */
  async dropCandles(symbol: string): Promise<void> {
    for (const iv of CANDLE_INTERVALS) {
      const starts = await this.client.zrange(K.candleIndex(symbol, iv), 0, -1);
      const keys = starts.flatMap((s) => [K.candle(symbol, iv, Number(s)), K.candleSeen(symbol, iv, Number(s))]);
      if (keys.length > 0) await this.client.del(...keys);
      await this.client.del(K.candleIndex(symbol, iv));
    }
  }

  /** Folds a trade into the risk view (idempotent per trade id). */
  async foldRisk(t: Trade): Promise<void> {
    const keys = [K.riskSeen, K.risk(t.buyAccount), K.risk(t.sellAccount), K.riskAccounts];
    const notional = ticksFromWire(t.notionalTicks);
    const args = [t.id, t.symbol, t.qty, -t.qty, ticksToWire(notional), ticksToWire(-notional), t.buyAccount, t.sellAccount];
    await RISK.run(this.client, keys, args);
  }

  /** An account's exposure from the trade stream. */
  async exposure(account: string): Promise<Exposure> {
    const h = await this.client.hgetall(K.risk(account));
    return { units: unitsOf(h), netNotionalTicks: BigInt(h.net ?? 0), grossNotionalTicks: BigInt(h.gross ?? 0) };
  }

  private closing: Promise<unknown> | undefined;

  /** Closes the client (once). */
  async onApplicationShutdown(): Promise<void> {
    await (this.closing ??= this.client.quit().catch(() => this.client.disconnect()));
  }
}
