/**
 * The rate-limit rows (EchoMQ only, run when named: `--rows rate`): claim throughput of one
 * consumer of concurrency 50 with no rate limit, a fixed window and a sliding window, each limit
 * 1,000,000 jobs per second (far above what one queue does here, so it never binds: the rows
 * measure what keeping the window costs, not the limit). docs/queue.md, "Rate limits", quotes
 * them.
 */
import { BUILTIN_DEFAULTS, resolveDefaults } from '@echomq/nestjs/unstable';
import { EchoMqDriver } from './echomq.js';
import { processLocal, type PhaseContext, type PhaseResult } from './phases.js';

/** Which limiter a row runs under. */
export type RateRow = 'none' | 'fixed' | 'sliding';

/** The limit of the limited rows: high enough never to bind. */
export const RATE_LIMIT_MAX = 1_000_000;

/** `process_c50_rate_<row>_per_s`: `processLocal` at concurrency 50 on a queue whose stored policy is the row's limit. */
export async function processRateLimited(ctx: PhaseContext, row: RateRow, n: number): Promise<PhaseResult> {
  const rateLimit = row === 'none' ? undefined : { max: RATE_LIMIT_MAX, intervalMs: 1000, window: row };
  // The consumer declares the queue's policy at start (as a Nest app's options would).
  const driver = new EchoMqDriver(ctx.url, resolveDefaults(BUILTIN_DEFAULTS, rateLimit ? { rateLimit } : {}));
  try {
    return await processLocal({ ...ctx, driver }, `process_c50_rate_${row}_per_s`, 50, n);
  } finally {
    await driver.close();
  }
}
