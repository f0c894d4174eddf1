import type { EchoMqConnection } from '../../core/connection/index.js';
import { EchoMqError } from '../../core/errors.js';
import { BASE62, ID_EPOCH_MS, NODE_BITS, SEQ_BITS } from '../../core/ids.js';
import type { QueueKeys } from '../../core/keys.js';
import type { ConsumerLogger } from '../../core/logger.js';
import { describeError } from '../../core/reply-errors.js';
import { callPipeline } from '../../core/scripts.js';
import { LATENCY_BUCKETS, STATS_FIELDS, latencyBucket, statsCall } from '../../core/wire/index.js';

/** Milliseconds between two flushes of a busy consumer. */
export const STATS_FLUSH_MS = 5000;
/** Minutes kept unflushed while Valkey cannot be reached (older ones are dropped). */
const KEEP_MINUTES = 120;
/** Where each counter sits in a minute's row: the order of `STATS_FIELDS`. */
const C = 0, F = 1, D = 2, RS = 3, WS = 4, R0 = 5, W0 = 5 + LATENCY_BUCKETS;
/** Codes that mean the script refused the call (sending it again would be refused again). */
const REFUSALS = new Set(['EMQ_BAD_ARG', 'EMQ_WRONGTYPE', 'EMQ_VERSION', 'EMQ_NOPERM']);
const SHIFT = 2 ** (NODE_BITS + SEQ_BITS);
/** Base62 digit values by char code (-1: not a digit). */
const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < BASE62.length; i++) DIGIT[BASE62.charCodeAt(i)] = i;

/**
 * The mint instant (epoch ms) of a branded id, in plain doubles (no BigInt: it runs per claimed
 * job). The rounding of a 64-bit value in a double stays far below one millisecond (2^22 units).
 * NaN for a malformed id.
 */
export function mintedAt(id: string): number {
  let v = 0;
  for (let i = 3; i < id.length; i++) {
    const d = DIGIT[id.charCodeAt(i)] ?? -1;
    if (d < 0) return NaN;
    v = v * 62 + d;
  }
  return Math.floor(v / SHIFT) + ID_EPOCH_MS;
}

/**
 * A consumer's metrics, kept in memory per minute and flushed to the queue's stats hashes
 * (stats.lua, docs/protocol.md) in one round trip every `STATS_FLUSH_MS` and when it stops:
 * jobs completed, failed (retried) and buried, and histograms of run time (claim → end) and wait
 * time (enqueue → first claim). Counting costs a few array writes per job, never a round trip.
 */
export class StatsMeter {
  private readonly rows = new Map<number, number[]>();
  private minute = -1;
  private row: number[] = [];
  private lastFlush = Date.now();
  private flushing?: Promise<void>;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly k: QueueKeys,
    private readonly log: ConsumerLogger,
  ) {}

  private at(now: number): number[] {
    const m = Math.floor(now / 60_000);
    if (m !== this.minute) {
      this.minute = m;
      let r = this.rows.get(m);
      if (!r) this.rows.set(m, (r = new Array<number>(STATS_FIELDS.length).fill(0)));
      this.row = r;
    }
    return this.row;
  }

  /** `n` completions landed. */
  completed(n: number): void {
    if (n > 0) this.at(Date.now())[C] += n;
  }

  /** An attempt failed and the job was scheduled again (`dead`: it was buried instead). */
  failed(dead: boolean, n = 1): void {
    if (n > 0) this.at(Date.now())[dead ? D : F] += n;
  }

  /** A handler ran for `ms` (claim → end), ending at `now`. */
  ran(ms: number, now = Date.now()): void {
    const r = this.at(now);
    const v = Math.max(0, Math.round(ms));
    r[R0 + latencyBucket(v)]++;
    r[RS] += v;
  }

  /** Jobs claimed at `now` waited since their id was minted (first attempts only: a retry's id is its first enqueue's). */
  claimed(jobs: readonly { readonly id: string; readonly attempt: number }[], now: number): void {
    let r: number[] | undefined;
    for (const j of jobs) {
      if (j.attempt !== 1) continue;
      const t = mintedAt(j.id);
      if (!(t > 0)) continue;
      r ??= this.at(now);
      const v = Math.max(0, now - t);
      r[W0 + latencyBucket(v)]++;
      r[WS] += v;
    }
  }

  /** True when a flush is due (the maintenance tick asks). */
  due(now = Date.now()): boolean {
    return now - this.lastFlush >= STATS_FLUSH_MS && this.rows.size > 0;
  }

  /**
   * Sends every minute counted so far, one stats.lua call each, in one pipeline. A minute whose
   * call failed on the connection is kept for the next flush (at most `KEEP_MINUTES`); one the
   * script refused is dropped, with a warning.
   */
  flush(): Promise<void> {
    this.flushing ??= this.send().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async send(): Promise<void> {
    this.lastFlush = Date.now();
    const taken = [...this.rows].filter(([, r]) => r.some((n) => n > 0));
    this.rows.clear();
    this.minute = -1;
    if (taken.length === 0) return;
    const calls = taken.map(([m, r]) => {
      const fields: Record<string, number> = {};
      r.forEach((n, i) => (fields[STATS_FIELDS[i]] = n));
      return statsCall(this.k, m * 60, fields);
    });
    let settled: PromiseSettledResult<unknown>[];
    try {
      settled = await callPipeline(this.conn.scriptClient, calls);
    } catch (err) {
      settled = calls.map(() => ({ status: 'rejected', reason: err }));
    }
    settled.forEach((s, i) => {
      if (s.status === 'fulfilled') return;
      const refused = s.reason instanceof EchoMqError && REFUSALS.has(s.reason.code);
      if (refused) this.log.warn(`consumer ${this.k.queue}: its metrics of minute ${taken[i][0]} were refused (${describeError(s.reason)}); dropped`);
      else this.keep(taken[i][0], taken[i][1]);
    });
  }

  /** Puts a minute back after a failed call, adding to what was counted meanwhile. */
  private keep(m: number, r: number[]): void {
    const now = this.rows.get(m);
    if (now) r.forEach((n, i) => (now[i] += n));
    else this.rows.set(m, r);
    this.minute = -1;
    for (const old of this.rows.keys()) if (old < Math.floor(Date.now() / 60_000) - KEEP_MINUTES) this.rows.delete(old);
  }
}
