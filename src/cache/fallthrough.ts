import type { Json } from '../core/codec.js';
import { EchoMqError } from '../core/errors.js';
import type { CacheApi, CacheEntryOptions } from './cache-types.js';

/** Default time the cache is skipped after it failed (ms). */
export const DEFAULT_BREAKER_OPEN_MS = 5000;
/** Default time a cache lookup may take before the work runs uncached (ms). */
export const DEFAULT_LOOKUP_TIMEOUT_MS = 500;

/**
 * A short circuit breaker in front of the cache: after a cache failure (or a lookup slower than
 * `lookupTimeoutMs`) the cache is skipped for `openMs`, so while Valkey is down each request
 * runs its work at once instead of waiting seconds for a reconnect. The next call after the
 * window tries the cache again.
 */
export class CacheBreaker {
  private openUntil = 0;
  private skipped = 0;
  /** Keys whose work is running now (through the cache), so a waiting caller keeps waiting. */
  private readonly running = new Map<string, number>();

  constructor(
    readonly openMs: number = DEFAULT_BREAKER_OPEN_MS,
    readonly lookupTimeoutMs: number = DEFAULT_LOOKUP_TIMEOUT_MS,
    private readonly clock: () => number = () => Date.now(),
  ) {}

  /** True while the cache is being skipped. */
  get isOpen(): boolean {
    return this.clock() < this.openUntil;
  }

  /** Calls that ran uncached because of the breaker or a cache failure. */
  get bypasses(): number {
    return this.skipped;
  }

  /** Opens the breaker for `openMs` from now. */
  trip(): void {
    this.openUntil = this.clock() + this.openMs;
  }

  /** @internal */ bypassed(): void {
    this.skipped++;
  }

  /** @internal */ started(key: string): () => void {
    this.running.set(key, (this.running.get(key) ?? 0) + 1);
    return () => {
      const n = (this.running.get(key) ?? 1) - 1;
      if (n <= 0) this.running.delete(key);
      else this.running.set(key, n);
    };
  }

  /** @internal */ isRunning(key: string): boolean {
    return this.running.has(key);
  }
}

/** How `throughCache` answered: from the cache, by running the work (and caching it), or uncached. */
export type Via = 'hit' | 'miss' | 'bypass';

/** Thrown inside a loader to hand the work's result back without caching it. */
class Uncacheable extends Error {}
/** Thrown by a loader whose caller already gave up on the cache (its work runs uncached). */
class Abandoned extends Error {}

/** Errors thrown by works, so a caller can tell them from cache failures. */
const workErrors = new WeakSet<object>();

/** Codes of a caller's mistake (a bad key, name or option): thrown, never bypassed. */
const MISUSE = new Set(['EMQ_BAD_NAME', 'EMQ_BAD_OPTION', 'EMQ_BAD_ID']);
/** Codes of a value the cache cannot hold: the work's result is served uncached. */
const UNSTORABLE = new Set(['EMQ_BAD_PAYLOAD', 'EMQ_PAYLOAD_TOO_LARGE']);

/** What a failure of `getOrLoad` means for the caller. */
function classify(err: unknown): 'work' | 'uncacheable' | 'abandoned' | 'misuse' | 'cache' {
  if (typeof err === 'object' && err !== null && workErrors.has(err)) return 'work';
  if (err instanceof Uncacheable || (err instanceof EchoMqError && UNSTORABLE.has(err.code))) return 'uncacheable';
  if (err instanceof Abandoned) return 'abandoned';
  if (err instanceof EchoMqError && MISUSE.has(err.code)) return 'misuse';
  return 'cache'; // unavailable, timed out, refused by the server (OOM, NOPERM, …), foreign data
}

type Outcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/**
 * Runs `work` through `api.getOrLoad` and never fails because of the cache: when the breaker is
 * open, the cache fails, or the lookup takes longer than the breaker's timeout (and no work for
 * the key is running), `work` runs uncached (`bypass`). An error of `work` itself, and a
 * caller's mistake (a bad key, name or option), are thrown as is. A result `cacheable` refuses,
 * or one the cache cannot hold (not JSON, too large), is returned without being stored (`miss`);
 * callers that joined its flight run their own work. `work` runs at most once per call.
 */
export async function throughCache<T extends Json | undefined>(
  api: CacheApi,
  breaker: CacheBreaker,
  key: string,
  work: () => Promise<T>,
  opts: CacheEntryOptions,
  cacheable: (value: T) => boolean = () => true,
): Promise<{ value: T; via: Via }> {
  const uncached = async (via: Via): Promise<{ value: T; via: Via }> => {
    if (via === 'bypass') breaker.bypassed();
    return { value: await work(), via };
  };
  if (breaker.isOpen) return uncached('bypass');
  const flight = `${opts.namespace ?? ''}\u0000${key}`;
  let state: 'waiting' | 'running' | 'abandoned' = 'waiting';
  let settle!: (o: Outcome<T>) => void;
  const own = new Promise<Outcome<T>>((r) => (settle = r));
  const loader = async (): Promise<T> => {
    if (state === 'abandoned') throw new Abandoned('the caller bypassed the cache');
    state = 'running';
    const done = breaker.started(flight);
    let value: T;
    try {
      value = await work();
    } catch (error) {
      if (typeof error === 'object' && error !== null) workErrors.add(error);
      settle({ ok: false, error });
      throw error;
    } finally {
      done();
    }
    settle({ ok: true, value });
    if (!cacheable(value)) throw new Uncacheable('not cacheable');
    return value;
  };
  const cached = api.getOrLoad<T>(key, loader, opts).then(
    (value) => ({ kind: 'cached' as const, value }),
    (error: unknown) => ({ kind: 'failed' as const, error }),
  );
  let timer: NodeJS.Timeout | undefined;
  const slow = (): Promise<{ kind: 'slow' }> =>
    new Promise((r) => {
      timer = setTimeout(() => r({ kind: 'slow' }), breaker.lookupTimeoutMs);
      timer.unref();
    });
  const ownDone = own.then((o) => ({ kind: 'own' as const, o }));
  let first = await Promise.race([cached, ownDone, slow()]);
  clearTimeout(timer);
  // Slow, but another caller's work for this key is running: wait for it (herd protection).
  if (first.kind === 'slow' && breaker.isRunning(flight)) first = await Promise.race([cached, ownDone]);
  if (first.kind === 'own') {
    void cached.then((r) => {
      if (r.kind === 'failed' && classify(r.error) === 'cache') breaker.trip();
    });
    if (!first.o.ok) throw first.o.error;
    return { value: first.o.value, via: 'miss' };
  }
  if (first.kind === 'cached') return { value: first.value, via: 'hit' };
  if (first.kind === 'slow') {
    state = 'abandoned';
    breaker.trip();
    return uncached('bypass');
  }
  const { error } = first;
  switch (classify(error)) {
    case 'uncacheable':
      return uncached('miss'); // the flight this caller joined produced a value the cache cannot hold
    case 'abandoned':
      return uncached('bypass');
    case 'work': // the work of the flight this caller joined failed: its error is the answer
    case 'misuse':
      throw error;
    case 'cache':
      breaker.trip();
      return uncached('bypass');
  }
}
