import type { CacheService } from '../cache/cache-service.js';
import type { CacheStats } from '../cache/cache-types.js';
import { fields } from '../bus/consumer-group/index.js';
import type { EchoMqConnection } from '../core/connection/index.js';
import { fromReplyError } from '../core/reply-errors.js';
import { CacheKeys } from '../core/keys.js';
import { bulkLimit, type NamePage } from './queue-admin.js';
import { assertKnown, readEntries, registryPage, type EntryProblem } from './registry.js';

/** A cache namespace as the server knows it (its entries live in their own slots: not counted, no SCAN). */
export interface CacheNamespaceInfo {
  /** The namespace's name. */
  readonly name: string;
  /** Invalidation announcements ever appended to its log (`entries-added`; one per invalidate call or tag chunk). */
  readonly invalidations: number;
  /** Announcements still retained in its log. */
  readonly retained: number;
  /** When the last invalidation was announced (server clock), if any. */
  readonly lastInvalidationAt?: Date;
  /** In a `stats` page only: why the entry could not be read (its figures are then 0), as `EMQ_<CODE> message`. */
  readonly error?: string;
  /** In a `stats` page only, with `error`: `invalid name` (a registry entry the key grammar refuses) or `unreadable`. */
  readonly problem?: EntryProblem;
}

/** `CacheAdmin.stats`: the namespaces' server-side figures and this process's counters. */
export interface CacheAdminStats extends NamePage<CacheNamespaceInfo> {
  /** The counters of this process's `CacheService` (hits, misses, loads, stale serves, invalidations). */
  readonly process: CacheStats;
}

/**
 * The operator surface of the Cache (docs/admin.md): the registry of namespaces with their
 * invalidation figures, and invalidation of a key or a tag (through `CacheService`, so L1s and
 * other nodes follow). A namespace nobody announced and without a log is `NotFoundError`.
 */
export class CacheAdmin {
  constructor(
    private readonly conn: EchoMqConnection,
    private readonly cache: CacheService,
  ) {}

  /** One page of the known namespaces (name order, after `after`) with their figures, and this process's counters. */
  async stats(opts: { after?: string; limit?: number } = {}): Promise<CacheAdminStats> {
    const page = await registryPage(this.conn, 'caches', opts.after, bulkLimit(opts.limit ?? 100));
    const { items, unreadable } = await readEntries(this.conn, 'caches', page.names, (n) => this.read(n), (n) => ({ name: n, invalidations: 0, retained: 0 }));
    return { items, next: page.next, unreadable, process: this.cache.stats() };
  }

  /** One namespace's figures. */
  async namespace(ns: string): Promise<CacheNamespaceInfo> {
    await this.assertKnown(ns);
    return this.read(ns);
  }

  /** Invalidates one key of a namespace (tombstone, L1s and other nodes told). */
  async invalidate(ns: string, key: string): Promise<void> {
    new CacheKeys(ns).entry(key);
    await this.assertKnown(ns);
    await this.cache.invalidate(key, { namespace: ns });
  }

  /** Invalidates every key of a namespace carrying `tag`. */
  async invalidateTag(ns: string, tag: string): Promise<void> {
    new CacheKeys(ns).tag(tag);
    await this.assertKnown(ns);
    await this.cache.invalidateTag(tag, { namespace: ns });
  }

  /** Throws `NotFoundError` unless the namespace was announced or has an invalidation log. */
  assertKnown(ns: string): Promise<void> {
    return assertKnown(this.conn, 'caches', ns, [new CacheKeys(ns).log], 'cache namespace');
  }

  private async read(ns: string): Promise<CacheNamespaceInfo> {
    const k = new CacheKeys(ns);
    try {
      if ((await this.conn.client.exists(k.log)) === 0) return { name: ns, invalidations: 0, retained: 0 };
      const info = fields(await this.conn.client.xinfo('STREAM', k.log));
      const last = String(info.get('last-generated-id') ?? '0-0');
      const ms = Number(last.split('-')[0]);
      return { name: ns, invalidations: Number(info.get('entries-added') ?? 0), retained: Number(info.get('length') ?? 0), lastInvalidationAt: ms > 0 ? new Date(ms) : undefined };
    } catch (err) {
      throw fromReplyError(err);
    }
  }
}
