import { Cluster } from 'iovalkey';
import type { EchoMqConnection } from '../core/connection/index.js';
import type { CacheKeys } from '../core/keys.js';
import { call, type ScriptCall } from '../core/scripts.js';
import { readEntryCall, writeThenAnnounce, type AfterWrites, type L2Read } from './cache-wire.js';
import type { Coherence } from './coherence/index.js';
import { ReadBatch } from './read-batch.js';

/**
 * How `CacheService` reaches L2 in as few round trips as it can: on a standalone Valkey the L2
 * reads of one event-loop turn share one script call (`ReadBatch`), and a write travels with
 * its announcement in one pipeline; on a cluster (entries on many nodes) each call goes alone.
 */
export class L2Access {
  /** The read batch of a standalone client; null on a cluster; undefined until first use. */
  private batch?: ReadBatch | null;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly coherence: Coherence,
  ) {}

  /**
   * Reads an entry once this node follows the namespace's invalidations from a known position:
   * a value read before that could miss an invalidation announced in between and stay in L1.
   */
  read(k: CacheKeys, key: string, withLease = false): Promise<L2Read> {
    const go = (): Promise<L2Read> => {
      const batch = this.reads();
      return batch ? batch.read({ k, key, withLease }) : call(this.conn.scriptClient, readEntryCall(k, key, withLease));
    };
    return this.coherence.isReady(k.ns) ? go() : this.coherence.ready(k.ns).then(go);
  }

  /** `writeThenAnnounce` on this connection: one pipeline on a standalone Valkey. */
  writeThenAnnounce<T>(writes: readonly ScriptCall<T>[], announce: readonly ScriptCall<string>[], after?: AfterWrites<T>): Promise<T[]> {
    return writeThenAnnounce(this.conn.scriptClient, writes, announce, this.reads() !== undefined, after);
  }

  private reads(): ReadBatch | undefined {
    if (this.batch === undefined) this.batch = this.conn.client instanceof Cluster ? null : new ReadBatch(this.conn.scriptClient);
    return this.batch ?? undefined;
  }
}
