import type { Subscription } from 'rxjs';
import { compareStreamIds } from '../../core/stream-id.js';
import type { EchoMqConnection } from '../../core/connection/index.js';
import { InvalidOptionError } from '../../core/errors.js';
import { assertBrandedId, isBrandedId } from '../../core/ids.js';
import { CacheKeys, assertCacheKey } from '../../core/keys.js';
import { PROTOCOL_VERSION, call, type ScriptCall } from '../../core/scripts.js';
import { SignalHub } from '../../core/signal-hub.js';
import { hasGap, logEnd, readLog, type LogPosition } from './coherence-log.js';

/** What coherence applies to: the process's L1. */
export interface L1Target {
  /** Drops `key` of `ns` from L1 when L1 holds a version older than `ver` (and refuses older fills for a while). */
  applyInvalidation(ns: string, key: string, ver: string): void;
  /** Drops every L1 entry of `ns` (the log was trimmed past this node's position). */
  dropNamespace(ns: string): void;
}

/** Tuning of coherence beyond the poll period. */
export interface CoherenceOptions {
  /** Bound of each namespace's invalidation log (`MAXLEN ~`). Default 10,000 entries. */
  readonly logMaxLen?: number;
}

/** Default poll period (ms): the staleness bound when a signal is lost. */
export const DEFAULT_COHERENCE_POLL_MS = 1000;
/** Default bound of a namespace's invalidation log (entries). */
export const DEFAULT_COHERENCE_LOG_MAX_LEN = 10_000;
/** Most keys one log entry carries; larger announcements are split into several entries. */
export const MAX_KEYS_PER_ANNOUNCEMENT = 1000;
const READ_BATCH = 1000;
/**
 * How long (ms) the log read waits after a signal whose hint named its keys (already dropped from
 * L1 on arrival): past the re-reads the drop causes (an L2 round trip, ~0.1–0.5 ms), so they do
 * not share this process's turn and its connection with the log read. Only the bound of an entry
 * whose own signal was lost and whose next entry's was not grows, by this much.
 */
export const HINT_READ_DELAY_MS = 2;

/** One watched namespace: where this node stands in its log, and its read loop state. */
interface Follower {
  readonly ns: string;
  readonly keys: CacheKeys;
  /** The last applied stream id and the log's addition count there; undefined until the start is read. */
  pos?: LogPosition;
  /** A read loop is running. */
  busy: boolean;
  /** Something asked for a read while one was running: read again when it ends. */
  again: boolean;
  running?: Promise<void>;
  /** A log read scheduled after a hint that named its keys (see `deferKick`). */
  deferred?: NodeJS.Timeout;
  sub?: Subscription;
  readonly ready: Promise<void>;
  markReady: () => void;
}

/**
 * Invalidations ride the Bus: announced to the namespace's retained invalidation log
 * (`cache-announce.lua`) and signalled on its sharded channel for speed. Every node follows the
 * log of each namespace it watches from its own position, in order: it reads on a signal, and
 * every `pollMs` in case a signal was lost; after a disconnect it replays what it missed; when
 * the log was trimmed past its position it drops the namespace from L1 and jumps to the end.
 */
export class Coherence {
  private readonly followers = new Map<string, Follower>();
  private readonly hub: SignalHub;
  private readonly logMaxLen: number;
  private timer?: NodeJS.Timeout;
  private closed = false;

  constructor(
    protected readonly conn: EchoMqConnection,
    protected readonly l1: L1Target,
    protected readonly pollMs: number = DEFAULT_COHERENCE_POLL_MS,
    options: CoherenceOptions = {},
  ) {
    if (!Number.isFinite(pollMs) || pollMs < 1) throw new InvalidOptionError(`coherence pollMs must be a number >= 1`);
    const max = options.logMaxLen ?? DEFAULT_COHERENCE_LOG_MAX_LEN;
    if (!Number.isSafeInteger(max) || max < 1 || max > 1_000_000) throw new InvalidOptionError('coherence logMaxLen must be 1..1000000');
    this.logMaxLen = max;
    this.hub = new SignalHub(conn, 1024);
  }

  /**
   * Announces that `keys` of `ns` were invalidated at version `ver`: one log entry per 1000 keys,
   * each signalled. Validates everything before any I/O. Resolves to the id of the last entry
   * (`""` when `keys` is empty: nothing is written).
   */
  async announce(ns: string, keys: readonly string[], ver: string): Promise<string> {
    let id = '';
    for (const c of this.announceCalls(ns, keys, ver)) id = await call(this.conn.scriptClient, c);
    return id;
  }

  /**
   * The `cache-announce.lua` calls of `announce` (one per 1000 keys), validated, for a caller
   * that sends them itself (pipelined behind its write). Each resolves to its entry's id.
   */
  announceCalls(ns: string, keys: readonly string[], ver: string): ScriptCall<string>[] {
    const k = new CacheKeys(ns);
    for (const key of keys) assertCacheKey(key);
    assertBrandedId(ver, 'ver');
    const calls: ScriptCall<string>[] = [];
    for (let i = 0; i < keys.length; i += MAX_KEYS_PER_ANNOUNCEMENT) {
      const chunk = keys.slice(i, i + MAX_KEYS_PER_ANNOUNCEMENT);
      calls.push({ name: 'cache-announce', keys: [k.log, k.signal], args: [PROTOCOL_VERSION, this.logMaxLen, ver, ...chunk], parse: String });
    }
    return calls;
  }

  /** Starts following the invalidations of `ns` (idempotent). The start position is the log's end. */
  watch(ns: string): void {
    if (!this.closed) this.follower(ns);
  }

  /**
   * Like `watch`, and resolves once this node holds its start position: invalidations announced
   * after that are guaranteed to reach L1. (Retries while Valkey is unreachable.)
   */
  watching(ns: string): Promise<void> {
    return this.follower(ns).ready;
  }

  /**
   * Resolves once this node follows `ns` from a known position — or after 2 s, so that while
   * Valkey is unreachable a caller's own read fails fast with a typed error instead of hanging.
   */
  async ready(ns: string): Promise<void> {
    if (this.ready_.has(ns)) return;
    let timer: NodeJS.Timeout | undefined;
    const cap = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), 2000)));
    const ok = await Promise.race([this.watching(ns).then(() => true), cap]);
    clearTimeout(timer);
    if (ok) this.ready_.add(ns);
  }

  private readonly ready_ = new Set<string>();

  /** True once `ready(ns)` resolved with the start position held (a read need not wait). */
  isReady(ns: string): boolean {
    return this.ready_.has(ns);
  }

  /** Reads every watched namespace's log now, and resolves when those reads end. */
  async sync(): Promise<void> {
    for (const f of this.followers.values()) this.kick(f);
    await Promise.allSettled([...this.followers.values()].map((f) => f.running));
  }

  /** Stops following; closes what it opened. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const all = [...this.followers.values()];
    for (const f of all) {
      f.sub?.unsubscribe();
      if (f.deferred) clearTimeout(f.deferred);
    }
    await Promise.allSettled(all.map((f) => f.running));
    this.followers.clear();
    await this.hub.close();
  }

  /**
   * A signal arrived for `ns` (`{"id": <entry id>}`, with `"v"` and `"k"` for an entry of at most
   * 16 keys): drops the keys it names from L1 at once (an early copy of what the log read will
   * apply: idempotent, and it only ever drops L1 copies older than `v`), then reads unless this
   * node already stands at or past that entry. Subclasses may intercept signals (tests stop the
   * signal path this way).
   */
  protected signalled(ns: string, message: unknown): void {
    const f = this.followers.get(ns);
    if (!f) return;
    const m = typeof message === 'object' && message !== null ? (message as { id?: unknown; v?: unknown; k?: unknown }) : {};
    const id = m.id;
    if (typeof id === 'string' && f.pos !== undefined) {
      try {
        if (compareStreamIds(id, f.pos.id) <= 0) return;
      } catch {
        // a malformed hint: read anyway
      }
    }
    if (isBrandedId(m.v, 'ver') /* a signal's early drop trusts nothing else */ && Array.isArray(m.k)) {
      const ver = m.v;
      for (const key of m.k) if (typeof key === 'string') this.apply(() => this.l1.applyInvalidation(ns, key, ver));
      // L1 already dropped what the entry names: the log read only moves the position (and
      // catches a lost hint's entry), so it waits HINT_READ_DELAY_MS, one read for every hint of
      // that window. The re-reads of the dropped keys go out and come back meanwhile without the
      // log's MULTI (XRANGE + XINFO) built, sent and parsed in between on this process and its
      // connection (measured: bench/cache-lag-probe.ts, docs/cache.md "Invalidation lag").
      this.deferKick(f);
      return;
    }
    this.kick(f);
  }

  private follower(ns: string): Follower {
    let f = this.followers.get(ns);
    if (f) return f;
    if (this.closed) throw new InvalidOptionError('coherence is closed');
    const keys = new CacheKeys(ns);
    let markReady = (): void => {};
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const created: Follower = { ns, keys, busy: false, again: false, ready, markReady };
    f = created;
    this.followers.set(ns, created);
    // Subscribe before reading the start position, so a signal racing the start is not lost.
    created.sub = this.hub.observe<unknown>(keys.signal).subscribe({
      next: (message) => this.signalled(ns, message),
      error: () => {
        // The subscriber could not connect: polling still bounds staleness.
        created.sub = undefined;
      },
    });
    this.startTimer();
    this.kick(created);
    return created;
  }

  private startTimer(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      for (const f of this.followers.values()) this.kick(f);
    }, this.pollMs);
    this.timer.unref();
  }

  /** Reads `f`'s log once `HINT_READ_DELAY_MS` has passed (one pending read per namespace). */
  private deferKick(f: Follower): void {
    if (f.deferred || this.closed) return;
    f.deferred = setTimeout(() => {
      f.deferred = undefined;
      this.kick(f);
    }, HINT_READ_DELAY_MS);
    f.deferred.unref();
  }

  /** Runs the read loop of `f` unless one runs; then one more pass runs after it. */
  private kick(f: Follower): void {
    if (this.closed) return;
    if (f.busy) {
      f.again = true;
      return;
    }
    f.busy = true;
    f.running = this.drain(f);
  }

  private async drain(f: Follower): Promise<void> {
    try {
      do {
        f.again = false;
        await this.step(f);
      } while (f.again && !this.closed);
    } catch {
      // Valkey unreachable or the read failed: the next signal or poll retries from the same position.
    } finally {
      f.busy = false;
    }
  }

  /** One pass: take the start position, or apply every entry after the position, in order. */
  private async step(f: Follower): Promise<void> {
    if (f.pos === undefined) {
      const end = await logEnd(this.conn.client, f.keys.log);
      if (this.closed) return;
      f.pos = end;
      f.markReady();
      return;
    }
    for (;;) {
      const snap = await readLog(this.conn.client, f.keys.log, f.pos.id, READ_BATCH);
      if (this.closed) return;
      if (hasGap(f.pos, snap)) {
        // Entries after our position are gone: what they invalidated is unknown, so drop it all.
        this.apply(() => this.l1.dropNamespace(f.ns));
        f.pos = { id: snap.lastId, added: snap.added };
        return;
      }
      // No gap: the entries after the position are the next ones added, contiguous.
      let added: number = f.pos.added;
      for (const e of snap.entries) {
        for (const key of e.keys) this.apply(() => this.l1.applyInvalidation(f.ns, key, e.ver));
        f.pos = { id: e.id, added: ++added };
      }
      if (snap.entries.length < READ_BATCH) return;
    }
  }

  /** Calls into L1; an L1 failure never stalls the log (the position still advances). */
  private apply(fn: () => void): void {
    try {
      fn();
    } catch {
      // L1 is in-process; a throwing target is its own bug and must not wedge coherence.
    }
  }
}
