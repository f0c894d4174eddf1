import type { QueueKeys } from '../keys.js';
import { PROTOCOL_VERSION, type ScriptCall } from '../scripts.js';

/**
 * The upper bounds (ms, inclusive) of the latency histogram buckets `r0`..`r17` / `w0`..`w17`, a
 * 1-2-5 log scale from 1 ms to 10 min; bucket 18 (`r18`, `w18`) holds everything above 10 min.
 */
export const LATENCY_BOUNDS_MS: readonly number[] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 60_000, 120_000, 300_000, 600_000];

/** Number of histogram buckets (the bounds plus the open last one). */
export const LATENCY_BUCKETS = LATENCY_BOUNDS_MS.length + 1;

/** Seconds a minute hash (`stats:m:<minute>`) lives after its last write (25 h). */
export const STATS_MINUTE_TTL_S = 90_000;

/** Seconds an hour rollup (`stats:h:<hour>`) lives after its last write (15 days). */
export const STATS_HOUR_TTL_S = 1_296_000;

/** The bucket of a latency in ms: the first whose bound is not below it (the last one above 10 min). */
export function latencyBucket(ms: number): number {
  let i = 0;
  while (i < LATENCY_BOUNDS_MS.length && ms > LATENCY_BOUNDS_MS[i]) i++;
  return i;
}

/**
 * The fields of a stats hash, as stats.lua accepts them: `c` completed, `f` failed (retried), `d`
 * buried (dead), `r<i>`/`w<i>` run/wait-time histogram buckets, `rs`/`ws` their sums in ms.
 */
export const STATS_FIELDS: readonly string[] = [
  'c', 'f', 'd', 'rs', 'ws',
  ...Array.from({ length: LATENCY_BUCKETS }, (_, i) => `r${i}`),
  ...Array.from({ length: LATENCY_BUCKETS }, (_, i) => `w${i}`),
];

/** What a stats call wrote: the minute and hour numbers (keys `QueueKeys.statsMinute` / `statsHour`). */
export interface StatsWritten {
  /** floor(epoch s / 60) of the minute written. */
  readonly minute: number;
  /** floor(minute / 60). */
  readonly hour: number;
}

/**
 * The stats.lua call adding `fields` (name → increment, each 1..10^15; zeros are left out) to
 * the minute holding epoch second `second` and its hour's rollup. One call per minute flushed.
 */
export function statsCall(k: QueueKeys, second: number, fields: Readonly<Record<string, number>>): ScriptCall<StatsWritten> {
  const args: (string | number)[] = [PROTOCOL_VERSION, second];
  for (const [f, n] of Object.entries(fields)) if (n > 0) args.push(f, n);
  return {
    name: 'stats',
    keys: [k.meta],
    args,
    parse: (reply) => {
      const [minute, hour] = reply as [number, number];
      return { minute, hour };
    },
  };
}
