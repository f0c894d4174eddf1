/**
 * The option pieces the parts of the queue share: backoff, rate limit, attempts and the time
 * bounds. A leaf (it imports only the core), so `queue-options.ts`, the lane policy, schedules and
 * flows all import it and none of them has to import another for these.
 */
import { InvalidOptionError } from '../core/errors.js';
import { intIn, keySet, refuseUnknownKeys } from '../core/known-keys.js';

/** How long to wait before attempt n+1: fixed, or doubling from `delayMs` (capped at a day). */
export interface BackoffOptions {
  /** `fixed`: always `delayMs`; `exponential`: `delayMs` × 2^(n − 1) after the n-th failed attempt (at most a day). */
  readonly type: 'fixed' | 'exponential';
  /** The base delay (ms, 0..86,400,000). */
  readonly delayMs: number;
}

/**
 * A rate limit: `max` jobs (1..1,000,000) per `intervalMs` (1..86,400,000), counted on the server
 * clock for every consumer of the queue together (docs/queue.md, "Rate limits").
 */
export interface RateLimit {
  /** Jobs per window. */
  readonly max: number;
  /** The window in ms, on the server clock. */
  readonly intervalMs: number;
  /**
   * `fixed` (default): windows of `intervalMs` opened by the claim that takes their first job —
   * cheapest, but up to 2 × `max` may start around a window's end. `sliding`: at most `max` in
   * any `intervalMs`-long span, at a few more commands per claim.
   */
  readonly window?: 'fixed' | 'sliding';
}

/** Longest `delay`: ten 365-day years, in ms (the wire refuses more). */
export const MAX_DELAY_MS = 315_360_000_000;
/** Latest `runAt`: 2200-01-01T00:00:00Z, in epoch ms (the wire refuses later). */
export const MAX_RUN_AT_MS = 7_258_118_400_000;

const BACKOFF_KEYS = keySet<BackoffOptions>({ type: true, delayMs: true });

/**
 * Validates a backoff and renders its wire form (`f:<ms>` or `e:<ms>`). Unknown keys are refused
 * naming their path (`path`, default `backoff`, under the call `what`), BullMQ's `delay` with a hint.
 */
export function backoffWire(b: BackoffOptions, what = 'backoff options', path = 'backoff'): string {
  refuseUnknownKeys(b ?? {}, BACKOFF_KEYS, what, { path, hints: { delay: 'the delay is delayMs here' } });
  if (!b || (b.type !== 'fixed' && b.type !== 'exponential')) {
    throw new InvalidOptionError(`${path}.type must be "fixed" or "exponential"`);
  }
  intIn(b.delayMs, 0, 86_400_000, `${path}.delayMs`);
  return `${b.type === 'fixed' ? 'f' : 'e'}:${b.delayMs}`;
}

/** Validates attempts (1..1000). */
export const checkAttempts = (v: unknown): number => intIn(v, 1, 1000, 'attempts');
