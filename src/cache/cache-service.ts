import { randomBytes } from 'node:crypto';
import type { OnModuleDestroy } from '@nestjs/common';
import { decodePayload, encodePayload, type Json } from '../core/codec.js';
import type { EchoMqConnection } from '../core/connection/index.js';
import { CacheKeys, assertCacheKey } from '../core/keys.js';
import type { ScriptCall } from '../core/scripts.js';
import { jittered, resolveCacheOptions, resolveEntryOptions, type ResolvedCacheOptions, type ResolvedEntryOptions } from './cache-options.js';
import type { CacheApi, CacheEntryOptions, CacheOptions, CacheStats, Loader } from './cache-types.js';
import { addToTags, cacheWire, invalidateCall, markTag, setCall, type L2Read } from './cache-wire.js';
import { Coherence } from './coherence/index.js';
import { CacheBreaker } from './fallthrough.js';
import { L1 } from './l1.js';
import { L2Access } from './l2-access.js';
import { SingleFlight } from './single-flight.js';
import { announce } from '../core/announce.js';
import { TAG_LATE_MS, TAG_MARGIN_MS, fillVersion, scanTag } from './tag-index.js';

/** Poll period of a fill-lease loser waiting for the winner's value (ms). */
const LEASE_POLL_MS = 5;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
type Live = Extract<L2Read, { state: 'live' }>;
type Counters = { -readonly [K in Exclude<keyof CacheStats, 'l1Evictions' | 'bypasses'>]: number };

/**
 * The coherent L1/L2 near-cache. L2 is one Valkey hash per entry, written only by newer
 * versions (`cache-set.lua`); L1 is an in-process LRU under the same version rule. An
 * invalidation leaves a tombstone in both, so a load that began before it can never write its
 * old value back. Misses share one load per process (single flight) and, with `fillLease`, one
 * load across processes.
 */
export class CacheService implements CacheApi, OnModuleDestroy {
  private readonly o: ResolvedCacheOptions;
  /** The in-process near cache (exposed for tests and coherence). @internal */
  readonly l1: L1;
  private readonly coherence: Coherence;
  private readonly flights = new SingleFlight();
  private readonly namespaces = new Map<string, CacheKeys>();
  private readonly background = new Set<Promise<void>>();
  private readonly counters: Counters = { l1Hits: 0, l2Hits: 0, misses: 0, loads: 0, staleServed: 0, invalidations: 0 };
  private readonly token = randomBytes(12).toString('base64url');
  /** Skips the cache for a short while after it failed (used by `@Cached` and `CacheInterceptor`). @internal */
  readonly breaker = new CacheBreaker();
  private closed = false;
  private readonly l2: L2Access;

  constructor(
    protected readonly conn: EchoMqConnection,
    protected readonly options: CacheOptions = {},
  ) {
    this.o = resolveCacheOptions(options);
    new CacheKeys(this.o.namespace); // validates the default namespace at construction
    this.l1 = new L1({ maxEntries: this.o.l1MaxEntries, maxBytes: this.o.l1MaxBytes, tombstoneMs: this.o.tombstoneMs });
    this.coherence = new Coherence(conn, this.l1, this.o.pollMs);
    this.l2 = new L2Access(conn, this.coherence);
  }

  /** The default namespace (`cache.namespace`, "default" unless set). */
  get namespace(): string {
    return this.o.namespace;
  }

  /** The value of `key`, loading it (once per process, or once across processes with `fillLease`) on a miss. */
  async getOrLoad<T extends Json | undefined>(key: string, loader: Loader<T>, opts?: CacheEntryOptions): Promise<T> {
    const k = this.keysOf(opts?.namespace);
    assertCacheKey(key);
    const o = resolveEntryOptions(this.o, opts, k);
    const hit = this.l1.get(k.ns, key);
    if (hit && hit.expiresAt > Date.now()) {
      this.counters.l1Hits++;
      return decode<T>(hit.json);
    }
    if (hit) {
      this.counters.staleServed++;
      this.refresh(k, key, loader, o);
      return decode<T>(hit.json);
    }
    return this.flights.run(`g:${k.ns}\u0000${key}`, () => this.fill(k, key, loader, o));
  }

  /** The fresh value of `key`, or undefined (a miss, a tombstone, a cached miss, or past its TTL). */
  async get<T extends Json>(key: string, opts?: { namespace?: string }): Promise<T | undefined> {
    const k = this.keysOf(opts?.namespace);
    assertCacheKey(key);
    const hit = this.l1.get(k.ns, key);
    if (hit && hit.expiresAt > Date.now()) {
      this.counters.l1Hits++;
      return decode<T | undefined>(hit.json);
    }
    const r = await this.l2.read(k, key);
    if (r.state !== 'live' || r.freshMs <= 0) {
      this.counters.misses++;
      return undefined;
    }
    this.counters.l2Hits++;
    this.fillL1(k, key, r);
    return decode<T | undefined>(r.json);
  }

  /** A fresh `ver` id, minted only while this process certainly holds its node number. */
  private async mintVersion(): Promise<string> {
    await this.conn.ids.ready();
    return this.conn.ids.next('ver');
  }

  /**
   * Writes `value` (JSON) under a freshly minted version and announces it so the other nodes
   * drop their older L1 copies (they re-read the new value from L2). On a standalone Valkey the
   * announcement rides in the same write as the cache-set, behind it on the same connection:
   * Valkey runs them in that order, so no node can apply it before the value is in L2. (An
   * announcement of a write L2 refused is harmless: it drops only L1 copies older than a
   * version L2 already holds something newer than.) A write a tag's mark refused is not announced.
   */
  async set<T extends Json>(key: string, value: T, opts?: CacheEntryOptions): Promise<void> {
    const k = this.keysOf(opts?.namespace);
    assertCacheKey(key);
    const o = resolveEntryOptions(this.o, opts, k);
    const json = encodePayload(value, this.o.maxValueBytes, this.o.codec, 'value');
    const ver = await this.mintVersion();
    await this.write(k, key, ver, json, o, false, this.coherence.announceCalls(k.ns, [key], ver));
  }

  /** Tombstones `key` in L2 and L1 at a fresh version, then announces it to the other nodes. */
  async invalidate(key: string, opts?: { namespace?: string }): Promise<void> {
    const k = this.keysOf(opts?.namespace);
    k.entry(key);
    const ver = await this.mintVersion();
    const announce = this.coherence.announceCalls(k.ns, [key], ver);
    await this.l2.writeThenAnnounce([invalidateCall(k, key, ver, this.o.tombstoneMs)], announce, {
      written: () => {
        this.l1.applyInvalidation(k.ns, key, ver);
        this.counters.invalidations++;
      },
    });
  }

  /**
   * Invalidates every key carrying `tag`, in bounded chunks: mints one version, marks the tag
   * with it (a tagged write older than it that records itself later is refused), then walks the
   * tag's index (`ZSCAN`, ≤ 1000 members per call), tombstoning, applying to L1 and announcing
   * each chunk before reading the next. Members stay in the index until they expire.
   */
  async invalidateTag(tag: string, opts?: { namespace?: string }): Promise<void> {
    const k = this.keysOf(opts?.namespace);
    const index = k.tag(tag);
    const ver = await this.mintVersion();
    await markTag(this.conn.scriptClient, k, tag, ver, this.o.tombstoneMs);
    await scanTag(this.conn.client, index, async (chunk) => {
      const calls = chunk.map((m) => invalidateCall(k, m, ver, this.o.tombstoneMs));
      await this.l2.writeThenAnnounce(calls, this.coherence.announceCalls(k.ns, chunk, ver), {
        written: () => {
          for (const m of chunk) this.l1.applyInvalidation(k.ns, m, ver);
          this.counters.invalidations += chunk.length;
        },
      });
    });
  }

  /** A snapshot of the counters. `l1Hits` counts calls; the others count flights (joined callers share one). */
  stats(): CacheStats {
    return { ...this.counters, l1Evictions: this.l1.evictions, bypasses: this.breaker.bypasses };
  }

  /** Waits for background refreshes and closes coherence. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.background]);
    await this.coherence.close();
  }

  /** Nest lifecycle: closes before the connection is closed at application shutdown. */
  async onModuleDestroy(): Promise<void> {
    await this.close();
  }

  /** The keys of a namespace (validated), following its invalidations from first use. */
  private keysOf(ns: string | undefined): CacheKeys {
    const name = ns ?? this.o.namespace;
    let k = this.namespaces.get(name);
    if (!k) {
      k = new CacheKeys(name);
      this.namespaces.set(name, k);
      this.coherence.watch(name);
      announce(this.conn, 'caches', name); // the registry of known namespaces
    }
    return k;
  }

  /** One flight of a miss: L2, else (lease-gated) load. */
  private async fill<T extends Json | undefined>(k: CacheKeys, key: string, loader: Loader<T>, o: ResolvedEntryOptions): Promise<T> {
    const r = await this.l2.read(k, key);
    if (r.state === 'live') {
      this.fillL1(k, key, r);
      if (r.freshMs > 0) {
        this.counters.l2Hits++;
      } else {
        this.counters.staleServed++;
        this.refresh(k, key, loader, o);
      }
      return decode<T>(r.json);
    }
    this.counters.misses++;
    return o.fillLease ? this.leasedLoad(k, key, loader, o) : this.load(k, key, loader, o);
  }

  /** With the fill lease: the winner loads; a loser polls L2 until a value lands, the lease goes, or its time runs out. */
  private async leasedLoad<T extends Json | undefined>(k: CacheKeys, key: string, loader: Loader<T>, o: ResolvedEntryOptions): Promise<T> {
    const deadline = Date.now() + o.fillLeaseMs;
    while (Date.now() < deadline) {
      if (await cacheWire.takeLease(this.conn.scriptClient, k, key, this.token, o.fillLeaseMs)) {
        try {
          return await this.load(k, key, loader, o);
        } finally {
          await cacheWire.dropLease(this.conn.scriptClient, k, key, this.token).catch(() => false);
        }
      }
      for (;;) {
        await sleep(LEASE_POLL_MS);
        const r = await this.l2.read(k, key, true);
        if (r.state === 'live') {
          this.counters.l2Hits++;
          this.fillL1(k, key, r);
          return decode<T>(r.json);
        }
        if (!r.leased || Date.now() >= deadline) break;
      }
    }
    return this.load(k, key, loader, o);
  }

  /** Runs the loader under a version minted when the load begins, then writes its result. */
  private async load<T extends Json | undefined>(k: CacheKeys, key: string, loader: Loader<T>, o: ResolvedEntryOptions): Promise<T> {
    // Taken before the loader reads the origin: every write minted from now on is newer.
    const ver = fillVersion(Date.now(), this.o.clockSkewMs);
    this.counters.loads++;
    const value = await loader();
    if (value === undefined || value === null) {
      if (o.negativeTtlMs > 0) {
        await this.write(k, key, ver, value === null ? 'null' : '', { ...o, ttlMs: o.negativeTtlMs, graceMs: 0 }, true);
      }
      return value;
    }
    await this.write(k, key, ver, encodePayload(value, this.o.maxValueBytes, this.o.codec, 'value'), o, false);
    return value;
  }

  /**
   * Records the key in its tags' indexes (refused when a tag was invalidated at or after `ver`:
   * resolves undefined, nothing written), then cache-set with `ver`; L1 takes the value only
   * when L2 did (so never an older value than L2). Resolves whether L2 took it.
   */
  private async write(
    k: CacheKeys, key: string, ver: string, json: string, o: ResolvedEntryOptions, negative: boolean, announce?: ScriptCall<string>[],
  ): Promise<boolean | undefined> {
    const ttlMs = negative ? o.ttlMs : jittered(o.ttlMs, o.jitter);
    const tag = (): Promise<boolean> =>
      addToTags(this.conn.scriptClient, k, key, o.tags, ver, ttlMs + o.graceMs + TAG_MARGIN_MS).then((r) => r.recorded);
    const taggedAt = performance.now();
    if (o.tags.length > 0 && !(await tag())) return undefined;
    const set = setCall(k, key, { ver, json, ttlMs, graceMs: o.graceMs, maxBytes: this.o.maxValueBytes, tags: o.tags });
    const [r] = await this.l2.writeThenAnnounce([set], announce ?? [], {
      announceIf: ([w]) => w.written,
      written: ([w]) => {
        if (!w.written) return;
        const now = Date.now();
        this.l1.set(k.ns, key, { json: json === '' ? undefined : json, ver, expiresAt: now + ttlMs, graceUntil: now + ttlMs + o.graceMs });
      },
    });
    if (!r.written) return false;
    // A cache-set that came late could outlive its index member: record it again.
    if (o.tags.length > 0 && performance.now() - taggedAt > TAG_LATE_MS) await tag();
    return true;
  }

  /** One background refresh per key at a time; a failure keeps the stale value (within its grace). */
  private refresh<T extends Json | undefined>(k: CacheKeys, key: string, loader: Loader<T>, o: ResolvedEntryOptions): void {
    if (this.closed) return;
    const fk = `r:${k.ns}\u0000${key}`;
    if (this.flights.has(fk)) return;
    const run = async (): Promise<void> => {
      if (o.fillLease && !(await cacheWire.takeLease(this.conn.scriptClient, k, key, this.token, o.fillLeaseMs))) return;
      try {
        await this.load(k, key, loader, o);
      } finally {
        if (o.fillLease) await cacheWire.dropLease(this.conn.scriptClient, k, key, this.token).catch(() => false);
      }
    };
    const p = this.flights.run(fk, run).catch(() => undefined);
    this.background.add(p);
    void p.finally(() => this.background.delete(p));
  }

  private fillL1(k: CacheKeys, key: string, r: Live): void {
    const now = Date.now();
    this.l1.set(k.ns, key, { json: r.json, ver: r.ver, expiresAt: now + r.freshMs, graceUntil: now + r.liveMs });
  }
}

const decode = <T>(json: string | undefined): T => decodePayload(json) as T;

