import type { ValkeyClient } from '../core/connection/index.js';
import type { TopicKeys } from '../core/keys.js';

/** What a topic's log and archive hold in Valkey: the memory fields of `TopicInfo` (docs/bus.md, "Retention and the archive"). */
export interface TopicMemory {
  readonly logBytes: number;
  readonly logBytesEstimated?: true;
  readonly archiveSegments: number;
  readonly archiveBytes?: number;
}

/** Entries sampled for an estimate of the log's bytes, and the per-entry overhead it adds. */
const SAMPLE = 20;
const ENTRY_OVERHEAD = 24;

/** The log's bytes from its newest entries when `MEMORY USAGE` is refused (an ACL without it, an old server). */
async function estimateLog(client: ValkeyClient, k: TopicKeys, length: number): Promise<number> {
  const rows = (await client.xrevrange(k.log, '+', '-', 'COUNT', SAMPLE)) as [string, string[]][];
  if (rows.length === 0) return 0;
  const bytes = rows.reduce((n, [id, f]) => n + id.length + ENTRY_OVERHEAD + f.reduce((m, s) => m + s.length, 0), 0);
  return Math.round((bytes / rows.length) * length);
}

/**
 * A topic's memory figures: the log's `MEMORY USAGE` (in ACL category `@read`, so a read-only
 * monitoring user may run it; refused, it falls back to an estimate and says so), the archive's
 * segment count (`ZCARD`) and its running byte total from meta (no scan).
 */
export async function topicMemory(client: ValkeyClient, k: TopicKeys, length: number): Promise<TopicMemory> {
  const [segments, total] = await Promise.all([client.zcard(k.archive), client.hget(k.meta, 'archiveBytes')]);
  const archiveBytes = total !== null && /^\d{1,16}$/.test(total) ? Number(total) : undefined;
  let logBytes: number | undefined;
  let logBytesEstimated: true | undefined;
  try {
    const used = (await client.call('MEMORY', 'USAGE', k.log)) as number | null;
    logBytes = used ?? 0;
  } catch {
    logBytes = await estimateLog(client, k, length);
    logBytesEstimated = true;
  }
  return { logBytes, ...(logBytesEstimated ? { logBytesEstimated } : {}), archiveSegments: segments, ...(archiveBytes !== undefined ? { archiveBytes } : {}) };
}
