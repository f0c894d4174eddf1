import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'iovalkey';
import type { Depth, OrderState, Trade } from '../engine/engine.types.js';
import { CANDLE, RAISE, RISK, SETTLE, VIEWS } from './store.scripts.js';

/** The injection token of the store's Valkey URL. */
export const STORE_URL = Symbol('STORE_URL');

/** Candle intervals, in ms: 1 s and 1 min. */
export const CANDLE_INTERVALS = [1000, 60_000] as const;
/** How long candles are kept, per interval (1 h of 1 s candles, 1 day of 1 min candles). */
const CANDLE_TTL_MS: Readonly<Record<number, number>> = { 1000: 3_600_000, 60_000: 86_400_000 };
/** How long a client order id is remembered for idempotent placement. */
export const CLIENT_ID_TTL_S = 7 * 24 * 3600;

/** One candle (prices in ticks). */
export interface Candle {
  readonly start: number;
  readonly open: number;
  readonly high: number;
  readonly low: number;
  readonly close: number;
  readonly volume: number;
  readonly trades: number;
}

/** An account's settled holdings: cash in ticks and units per symbol. */
export interface Holdings {
  readonly cashTicks: number;
  readonly units: Record<string, number>;
}

/** An account's risk view from the trade stream (before settlement): net units, notional traded. */
export interface Exposure {
  readonly units: Record<string, number>;
  /** Σ notional bought − sold, in ticks. */
  readonly netNotionalTicks: number;
  /** Σ notional traded, in ticks. */
  readonly grossNotionalTicks: number;
}

const K = {
  clientId: (account: string, clientOrderId: string) => `x:{coid}:${account}:${clientOrderId}`,
  views: 'x:{orders}:views',
  cursor: (shard: number) => `x:{book:${shard}}:cursor`,
  depth: 'x:{books}:depth',
  settled: 'x:{ledger}:settled',
  holdings: (account: string) => `x:{ledger}:acct:${account}`,
  ledgerAccounts: 'x:{ledger}:accounts',
  candle: (symbol: string, iv: number, start: number) => `x:{md:${symbol}}:c:${iv}:${start}`,
  candleSeen: (symbol: string, iv: number, start: number) => `x:{md:${symbol}}:s:${iv}:${start}`,
  candleIndex: (symbol: string, iv: number) => `x:{md:${symbol}}:i:${iv}`,
  riskSeen: 'x:{risk}:seen',
  risk: (account: string) => `x:{risk}:acct:${account}`,
  riskAccounts: 'x:{risk}:accounts',
  latency: 'x:{stats}:settle-ms',
};

/** How many settlement latencies are kept (newest). */
const LATENCIES_KEPT = 100_000;

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
    // Auto-pipelining: commands issued in one event-loop turn share one socket write.
    this.client = new Redis(url, { maxRetriesPerRequest: 3, enableAutoPipelining: true });
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

  /** Stores order states newer than the stored ones. */
  async writeViews(states: readonly OrderState[]): Promise<void> {
    for (let i = 0; i < states.length; i += 500) {
      const args = states.slice(i, i + 500).flatMap((s) => [s.orderId, JSON.stringify(s)]);
      await VIEWS.run(this.client, [K.views], args);
    }
  }

  /** An order's latest stored state. */
  async view(orderId: string): Promise<OrderState | undefined> {
    const raw = await this.client.hget(K.views, orderId);
    return raw ? (JSON.parse(raw) as OrderState) : undefined;
  }

  /** The log position up to which shard `shard`'s effects are done (−1: none). */
  async cursor(shard: number): Promise<number> {
    return Number((await this.client.get(K.cursor(shard))) ?? -1);
  }

  /** Records that the effects of commands up to position `n` are done (never moves back). */
  async raiseCursor(shard: number, n: number): Promise<void> {
    await RAISE.run(this.client, [K.cursor(shard)], [n]);
  }

  /** Stores the depth snapshots of some symbols. */
  async setDepth(depths: readonly Depth[]): Promise<void> {
    if (depths.length === 0) return;
    await this.client.hset(K.depth, Object.fromEntries(depths.map((d) => [d.symbol, JSON.stringify(d)])));
  }

  /** Every symbol's latest depth snapshot. */
  async depths(): Promise<Depth[]> {
    const all = await this.client.hgetall(K.depth);
    return Object.keys(all)
      .sort()
      .map((s) => JSON.parse(all[s]) as Depth);
  }

  /** Moves cash and units of one trade, once per trade id; true when this call moved them. */
  async settle(t: Trade): Promise<boolean> {
    const keys = [K.settled, K.holdings(t.buyAccount), K.holdings(t.sellAccount), K.ledgerAccounts];
    return (await SETTLE.run(this.client, keys, [t.id, t.symbol, t.qty, t.qty * t.priceTicks, t.buyAccount, t.sellAccount])) === 1;
  }

  /** How many trades the ledger settled. */
  settledCount(): Promise<number> {
    return this.client.scard(K.settled);
  }

  /** Records one settlement's latency (trade → settled, ms). */
  async recordLatency(ms: number): Promise<void> {
    await this.client.multi().lpush(K.latency, ms).ltrim(K.latency, 0, LATENCIES_KEPT - 1).exec();
  }

  /** The newest `count` settlement latencies (ms). */
  async latencies(count = LATENCIES_KEPT): Promise<number[]> {
    return (await this.client.lrange(K.latency, 0, count - 1)).map(Number);
  }

  /** An account's settled holdings. */
  async holdings(account: string): Promise<Holdings> {
    const h = await this.client.hgetall(K.holdings(account));
    return { cashTicks: Number(h.cash ?? 0), units: unitsOf(h) };
  }

  /** Folds a trade into its symbol's candles (idempotent per trade id), every interval in one call. */
  async foldCandle(t: Trade): Promise<void> {
    const starts = CANDLE_INTERVALS.map((iv) => Math.floor(t.at / iv) * iv);
    const keys = CANDLE_INTERVALS.flatMap((iv, i) => [K.candle(t.symbol, iv, starts[i]), K.candleSeen(t.symbol, iv, starts[i]), K.candleIndex(t.symbol, iv)]);
    const args = CANDLE_INTERVALS.flatMap((iv, i) => [starts[i], CANDLE_TTL_MS[iv]]);
    await CANDLE.run(this.client, keys, [t.id, t.tradeSeq, t.priceTicks, t.qty, ...args]);
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
        : [{ start: starts[i], open: Number(h.o), high: Number(h.h), low: Number(h.l), close: Number(h.c), volume: Number(h.v), trades: Number(h.n) }],
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
    await RISK.run(this.client, keys, [t.id, t.symbol, t.qty, t.qty * t.priceTicks, t.buyAccount, t.sellAccount]);
  }

  /** An account's exposure from the trade stream. */
  async exposure(account: string): Promise<Exposure> {
    const h = await this.client.hgetall(K.risk(account));
    return { units: unitsOf(h), netNotionalTicks: Number(h.net ?? 0), grossNotionalTicks: Number(h.gross ?? 0) };
  }

  private closing: Promise<unknown> | undefined;

  /** Closes the client (once). */
  async onApplicationShutdown(): Promise<void> {
    await (this.closing ??= this.client.quit().catch(() => this.client.disconnect()));
  }
}
