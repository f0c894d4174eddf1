import type { EchoMqConnection } from '../core/connection/index.js';
import { InvalidOptionError } from '../core/errors.js';
import { queueKeys } from '../core/keys.js';
import { refuseUnknownKeys } from '../core/known-keys.js';
import { describeError, fromReplyError } from '../core/reply-errors.js';
import { LATENCY_BOUNDS_MS, LATENCY_BUCKETS, STATS_FIELDS } from '../core/wire/index.js';
import { logOnce } from './registry.js';

/** The range `QueueAdmin.metrics` reads. Every time is epoch ms (client clock). */
export interface StoredMetricsOptions {
  /** Start of the range (default: `to` minus one hour); rounded down to a whole step. */
  readonly from?: number;
  /** End of the range, exclusive (default: now); rounded up to a whole step. */
  readonly to?: number;
  /**
   * Width of one interval in ms, a whole number of minutes (default 60,000). A whole number of
   * hours reads the hourly rollups (range up to 15 days); anything else the minute hashes (range
   * up to 24 h). At most 1,440 intervals.
   */
  readonly step?: number;
}

/** Latencies of one interval, from the stored histogram (ms; null when nothing was measured). */
export interface LatencySummary {
  /** How many were measured. */
  readonly count: number;
  /** Their mean (the stored sum / count). */
  readonly meanMs: number | null;
  /** Median, interpolated inside its bucket (above the last bound, 10 min: the bound). */
  readonly p50Ms: number | null;
  /** 95th percentile, the same way. */
  readonly p95Ms: number | null;
  /** 99th percentile, the same way. */
  readonly p99Ms: number | null;
}

/** One interval of stored metrics. */
export interface MetricsPoint {
  /** Start of the interval (epoch ms). */
  readonly at: number;
  /** Jobs completed. */
  readonly completed: number;
  /** Failed attempts scheduled again (retried; a reaped lease counts too). */
  readonly failed: number;
  /** Jobs buried (dead). */
  readonly dead: number;
  /** Run time: claim → end of the handler, every attempt this runtime ran. */
  readonly run: LatencySummary;
  /** Wait time: enqueue (the id's mint) → first claim. */
  readonly wait: LatencySummary;
}

/** What `QueueAdmin.metrics` answers: the intervals oldest first, and their sum. */
export interface StoredMetrics {
  /** The queue read, or absent for all queues. */
  readonly queue?: string;
  /** Start of the range read (epoch ms, rounded down to a whole step). */
  readonly from: number;
  /** End of the range read, exclusive (rounded up to a whole step). */
  readonly to: number;
  /** Interval width (ms). */
  readonly step: number;
  /** `minute` hashes (kept 25 h) or `hour` rollups (kept 15 days). */
  readonly resolution: 'minute' | 'hour';
  /** One per interval, oldest first (intervals with nothing stored are zeros). */
  readonly points: readonly MetricsPoint[];
  /** The whole range summed. */
  readonly total: MetricsPoint;
  /** Stored keys or fields that could not be read (another type, a value that is no integer): skipped. */
  readonly skipped: number;
  /** For all queues: how many were read (the registry's first `MAX_METRICS_QUEUES`). */
  readonly queues?: number;
}

/** Most queues a metrics read over all queues adds up (the registry's first ones, in name order). */
export const MAX_METRICS_QUEUES = 200;
const MINUTE = 60_000;
const HOUR = 3_600_000;
const MAX_POINTS = 1440;
const MINUTE_SPAN = 24 * HOUR;
const HOUR_SPAN = 15 * 24 * HOUR;
const KNOWN = new Set(['from', 'to', 'step']);
const INDEX = new Map(STATS_FIELDS.map((f, i) => [f, i]));
const R0 = 5;
const W0 = 5 + LATENCY_BUCKETS;
const CHUNK = 500;

/** A checked, aligned range: its intervals and the stored keys each reads. */
interface Plan {
  readonly from: number;
  readonly to: number;
  readonly step: number;
  readonly resolution: 'minute' | 'hour';
  /** The stored units (minute or hour numbers), in order; unit i falls in interval `slot[i]`. */
  readonly units: readonly number[];
  readonly slot: readonly number[];
  readonly points: number;
}

const intIn = (v: unknown, lo: number, hi: number, what: string): number => {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < lo || v > hi) throw new InvalidOptionError(`${what} must be an integer ${lo}..${hi}, got ${String(v).slice(0, 40)}`);
  return v;
};

/** Checks and aligns a metrics range (`InvalidOptionError`, EMQ_BAD_OPTION, on a bad one). */
export function metricsPlan(o: StoredMetricsOptions = {}, now = Date.now()): Plan {
  refuseUnknownKeys(o, KNOWN, 'metrics options');
  const step = intIn(o.step ?? MINUTE, MINUTE, HOUR_SPAN, 'step');
  if (step % MINUTE !== 0) throw new InvalidOptionError(`step must be a whole number of minutes (ms), got ${step}`);
  const resolution = step % HOUR === 0 ? 'hour' : 'minute';
  const unit = resolution === 'hour' ? HOUR : MINUTE;
  const rawTo = intIn(o.to ?? now, 0, 8_640_000_000_000, 'to');
  const rawFrom = intIn(o.from ?? rawTo - HOUR, 0, 8_640_000_000_000, 'from');
  if (rawFrom >= rawTo) throw new InvalidOptionError(`from (${rawFrom}) must be before to (${rawTo})`);
  const from = Math.floor(rawFrom / step) * step;
  const to = Math.ceil(rawTo / step) * step;
  const span = resolution === 'hour' ? HOUR_SPAN : MINUTE_SPAN;
  if (to - from > span) throw new InvalidOptionError(`a ${resolution} range spans at most ${span / HOUR} h (the ${resolution} history kept), got ${((to - from) / HOUR).toFixed(1)} h; use a step of whole hours for longer ranges`);
  const points = (to - from) / step;
  if (points > MAX_POINTS) throw new InvalidOptionError(`at most ${MAX_POINTS} intervals, got ${points}; use a larger step`);
  const units: number[] = [];
  const slot: number[] = [];
  for (let t = from; t < to; t += unit) {
    units.push(t / unit);
    slot.push(Math.floor((t - from) / step));
  }
  return { from, to, step, resolution, units, slot, points };
}

/** Adds one stored hash into an interval's row; answers how many fields it skipped. */
function addHash(row: number[], h: Record<string, string>): number {
  let skipped = 0;
  for (const [f, v] of Object.entries(h)) {
    const i = INDEX.get(f);
    const n = /^\d{1,16}$/.test(v) ? Number(v) : NaN;
    if (i === undefined || !Number.isSafeInteger(n)) skipped++;
    else row[i] += n;
  }
  return skipped;
}

/** Reads one queue's stored hashes of a plan into `rows` (one per interval): pipelined, `CHUNK` keys a write. */
async function readQueue(conn: EchoMqConnection, queue: string, plan: Plan, rows: number[][]): Promise<number> {
  const k = queueKeys(queue);
  const key = (u: number): string => (plan.resolution === 'hour' ? k.statsHour(u) : k.statsMinute(u));
  let skipped = 0;
  for (let i = 0; i < plan.units.length; i += CHUNK) {
    const p = conn.client.pipeline();
    const part = plan.units.slice(i, i + CHUNK);
    for (const u of part) p.hgetall(key(u));
    let replies: [Error | null, unknown][] | null;
    try {
      replies = await p.exec();
    } catch (err) {
      throw fromReplyError(err);
    }
    part.forEach((u, j) => {
      const [err, h] = replies?.[j] ?? [new Error('no reply'), undefined];
      if (err) {
        skipped++;
        logOnce(conn, `stats\0${key(u)}`, `EchoMQ: the stats key ${key(u)} is skipped: ${describeError(fromReplyError(err))}`);
      } else skipped += addHash(rows[plan.slot[i + j]], h as Record<string, string>);
    });
  }
  return skipped;
}

/** The percentile `p` (0..1) of a histogram `b` of `n` values, interpolated inside its bucket. */
function percentile(b: readonly number[], n: number, p: number): number {
  const rank = p * n;
  let seen = 0;
  for (let i = 0; i < b.length; i++) {
    if (b[i] === 0) continue;
    if (seen + b[i] >= rank) {
      const lo = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1];
      if (i >= LATENCY_BOUNDS_MS.length) return lo;
      return lo + ((LATENCY_BOUNDS_MS[i] - lo) * (rank - seen)) / b[i];
    }
    seen += b[i];
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1];
}

function latency(row: readonly number[], from: number, sum: number): LatencySummary {
  const b = row.slice(from, from + LATENCY_BUCKETS);
  const count = b.reduce((a, n) => a + n, 0);
  if (count === 0) return { count, meanMs: null, p50Ms: null, p95Ms: null, p99Ms: null };
  const r = (v: number): number => Math.round(v * 10) / 10;
  return { count, meanMs: r(sum / count), p50Ms: r(percentile(b, count, 0.5)), p95Ms: r(percentile(b, count, 0.95)), p99Ms: r(percentile(b, count, 0.99)) };
}

function point(at: number, row: readonly number[]): MetricsPoint {
  return { at, completed: row[0], failed: row[1], dead: row[2], run: latency(row, R0, row[3]), wait: latency(row, W0, row[4]) };
}

/**
 * Reads the stored metrics of `queues` over a checked plan and adds them up per interval. Read
 * only: HGETALL of each stored hash in range, pipelined per queue (one slot), no SCAN. A key of
 * another type or a field that is no integer is skipped, counted in `skipped` and logged once.
 */
export async function readMetrics(conn: EchoMqConnection, queues: readonly string[], plan: Plan): Promise<Omit<StoredMetrics, 'queue' | 'queues'>> {
  const rows = Array.from({ length: plan.points }, () => new Array<number>(STATS_FIELDS.length).fill(0));
  const skipped = (await Promise.all(queues.map((q) => readQueue(conn, q, plan, rows)))).reduce((a, n) => a + n, 0);
  const sum = new Array<number>(STATS_FIELDS.length).fill(0);
  for (const r of rows) r.forEach((n, i) => (sum[i] += n));
  return {
    from: plan.from,
    to: plan.to,
    step: plan.step,
    resolution: plan.resolution,
    points: rows.map((r, i) => point(plan.from + i * plan.step, r)),
    total: point(plan.from, sum),
    skipped,
  };
}
