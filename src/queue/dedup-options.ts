import { InvalidOptionError } from '../core/errors.js';
import { intIn, keySet, refuseUnknownKeys } from '../core/known-keys.js';

/** Business-key de-duplication of one job (`EnqueueOptions.dedup`; docs/queue.md, "De-duplication"). */
export interface DedupOptions {
  /** The business key: 1..256 bytes, no control characters (e.g. `order-42`, an event id). */
  readonly key: string;
  /**
   * `window` (default): the first job keeps the key for `ttlMs`; a repeat adds nothing and
   * resolves to that job's id. `debounce`: a repeat while that job still waits for its first
   * claim replaces its payload (a job still delayed takes the repeat's delay or run-at, or
   * becomes due now without one) and resolves to its id; once it started, a repeat adds a new
   * job, which takes the key.
   */
  readonly mode?: 'window' | 'debounce';
  /** How long the key stays taken, in ms (1..2,592,000,000; debounce: from the last repeat). Default: the queue's `dedupWindowMs`. */
  readonly ttlMs?: number;
}

/** A job's dedup as the wire sends it: the key, the window and the mode word (`w` / `d`). */
export interface DedupWire {
  readonly key: string;
  readonly ttlMs: number;
  readonly mode: 'w' | 'd';
}

/** The keys of a `dedup` option object. */
export const DEDUP_KEYS = keySet<DedupOptions>({ key: true, mode: true, ttlMs: true });

/**
 * The dedup of enqueue options `o` (undefined when it has none), validated: `key` and `dedup` not
 * both, `dedup` an object of known keys, mode and ttlMs in range (`InvalidOptionError` naming
 * the option). `defaultTtl` is the queue's `dedupWindowMs`. The key itself is checked when its
 * Valkey key is spelt (`QueueKeys.dedup`).
 */
export function dedupWire(o: { readonly key?: string; readonly dedup?: DedupOptions }, defaultTtl: number): DedupWire | undefined {
  if (o.dedup === undefined) return o.key === undefined ? undefined : { key: o.key, ttlMs: defaultTtl, mode: 'w' };
  if (o.key !== undefined) throw new InvalidOptionError('give key or dedup, not both');
  const d = o.dedup;
  refuseUnknownKeys(d, DEDUP_KEYS, 'enqueue options', { path: 'dedup' });
  if (d.mode !== undefined && d.mode !== 'window' && d.mode !== 'debounce') {
    throw new InvalidOptionError(`dedup.mode must be "window" or "debounce", got ${JSON.stringify(d.mode)}`);
  }
  const ttlMs = d.ttlMs === undefined ? defaultTtl : intIn(d.ttlMs, 1, 2_592_000_000, 'dedup.ttlMs');
  return { key: d.key, ttlMs, mode: d.mode === 'debounce' ? 'd' : 'w' };
}
