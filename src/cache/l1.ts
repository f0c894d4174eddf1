import type { L1Target } from './coherence/index.js';

/** One L1 entry: the value's JSON text (undefined = a cached miss) and its version and clocks. */
export interface L1Entry {
  /** The value as JSON text; `undefined` for a cached miss (negative caching). */
  readonly json: string | undefined;
  /** The version (`ver…`) the value was written with. */
  readonly ver: string;
  /** Fresh until (epoch ms, this process's clock). */
  readonly expiresAt: number;
  /** Servable as stale until (epoch ms); at least `expiresAt`. */
  readonly graceUntil: number;
}

/** Bounds of an L1. */
export interface L1Bounds {
  readonly maxEntries: number;
  readonly maxBytes: number;
  /** How long an applied invalidation refuses older writes (ms). */
  readonly tombstoneMs: number;
}

interface Held extends L1Entry {
  readonly bytes: number;
}

/** The separator of namespace and key in L1's map: no name or key may contain it. */
const SEP = '\u0000';
const mapKey = (ns: string, key: string): string => ns + SEP + key;

/**
 * The in-process near cache: an LRU bounded by entries and by bytes of JSON, fenced by version
 * like L2. A write older than the version held, or than a remembered invalidation, is ignored.
 * Versions are 14-byte ASCII ids, so JavaScript's code-unit comparison is byte order.
 */
export class L1 implements L1Target {
  private readonly entries = new Map<string, Held>();
  /** Remembered invalidations: map key → {ver, until}. Insertion order ≈ expiry order. */
  private readonly tombstones = new Map<string, { ver: string; until: number }>();
  private heldBytes = 0;
  private evicted = 0;
  /**
   * A live iterator over `entries`, kept across evictions. Evicting always removes what it just
   * yielded, and new or touched entries are appended at the end, so it stands at the least
   * recently used entry without re-walking the deleted slots a fresh iterator would skip
   * (a Map keeps them until it rehashes: a fresh iterator per eviction costs O(deleted)).
   */
  private lru?: IterableIterator<[string, Held]>;

  constructor(
    private readonly bounds: L1Bounds,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Entries held. */
  get size(): number {
    return this.entries.size;
  }

  /** Entries pushed out by the bounds so far (least recently used first). */
  get evictions(): number {
    return this.evicted;
  }

  /** Bytes of JSON held. */
  get bytes(): number {
    return this.heldBytes;
  }

  /**
   * The entry of `key` while it is servable (fresh or within grace), marked most recently used;
   * an entry past its grace is dropped.
   */
  get(ns: string, key: string): L1Entry | undefined {
    const k = mapKey(ns, key);
    const e = this.entries.get(k);
    if (!e) return undefined;
    if (e.graceUntil <= this.clock()) {
      this.remove(k, e);
      return undefined;
    }
    this.entries.delete(k);
    this.entries.set(k, e);
    return e;
  }

  /**
   * Stores `entry` unless L1 holds the same or a newer version, or remembers an invalidation at
   * the same or a newer version. Returns true when stored.
   */
  set(ns: string, key: string, entry: L1Entry): boolean {
    if (this.bounds.maxEntries <= 0) return false;
    const k = mapKey(ns, key);
    const now = this.clock();
    const tomb = this.tombstones.get(k);
    if (tomb) {
      if (tomb.until <= now) this.tombstones.delete(k);
      else if (entry.ver < tomb.ver) return false;
    }
    const old = this.entries.get(k);
    if (old && entry.ver <= old.ver) return false;
    const bytes = entry.json === undefined ? 0 : Buffer.byteLength(entry.json, 'utf8');
    if (bytes > this.bounds.maxBytes || entry.graceUntil <= now) {
      if (old) this.remove(k, old);
      return false;
    }
    if (old) this.remove(k, old);
    this.entries.set(k, { ...entry, bytes });
    this.heldBytes += bytes;
    this.evict();
    return true;
  }

  /** Drops `key` unless it holds a newer version, and refuses older writes for the tombstone window. */
  applyInvalidation(ns: string, key: string, ver: string): void {
    const k = mapKey(ns, key);
    const e = this.entries.get(k);
    // Versions are unique mints: an entry at `ver` itself is the announced write, not older.
    if (e && e.ver >= ver) return;
    if (e) this.remove(k, e);
    const now = this.clock();
    const prev = this.tombstones.get(k);
    if (prev && prev.until > now && prev.ver >= ver) return;
    this.tombstones.delete(k);
    this.tombstones.set(k, { ver, until: now + this.bounds.tombstoneMs });
    this.pruneTombstones(now);
  }

  /** Drops every entry of `ns` (its remembered invalidations stay until they expire). */
  dropNamespace(ns: string): void {
    const prefix = ns + SEP;
    for (const [k, e] of this.entries) if (k.startsWith(prefix)) this.remove(k, e);
  }

  /** Drops everything. */
  clear(): void {
    this.entries.clear();
    this.tombstones.clear();
    this.heldBytes = 0;
    this.lru = undefined;
  }

  private remove(k: string, e: Held): void {
    this.entries.delete(k);
    this.heldBytes -= e.bytes;
  }

  /** Evicts least recently used entries until both bounds hold. */
  private evict(): void {
    while (this.entries.size > this.bounds.maxEntries || this.heldBytes > this.bounds.maxBytes) {
      let next = this.lru?.next();
      if (!next || next.done) {
        this.lru = this.entries.entries();
        next = this.lru.next();
        if (next.done) return;
      }
      const [k, e] = next.value;
      this.remove(k, e);
      this.evicted++;
    }
  }

  /** Drops expired remembered invalidations, and the oldest beyond the entry bound. */
  private pruneTombstones(now: number): void {
    const cap = Math.max(this.bounds.maxEntries, 1000);
    for (const [k, t] of this.tombstones) {
      if (t.until > now && this.tombstones.size <= cap) return;
      this.tombstones.delete(k);
    }
  }
}
