import type { TopicKeys } from '../keys.js';
import { PROTOCOL_VERSION, runScript, type ScriptClient } from '../scripts.js';

/** Most events in one publish call, and most entries archived by one trim call. */
export const BUS_BATCH_LIMIT = 1000;
/** Default payload budget of one archive segment: 8 MiB (one entry always fits). */
export const SEGMENT_BYTES = 8 * 1024 * 1024;
/** Default most expired segments deleted by one trim call. */
export const EXPIRE_LIMIT = 100;

/** One event to publish: its payload text, or the payload with the producer's traceparent. */
export type PublishItem = string | { readonly p: string; readonly tp: string };

/** The trim script's reply. */
export interface TrimReply {
  readonly archived: number;
  readonly trimmed: number;
  readonly expired: number;
  /** True when due entries remain (the call hit its limit or segment budget). */
  readonly more: boolean;
}

/**
 * Typed wrappers of the Bus scripts, one per script. Every key array is built here from
 * `TopicKeys`; services never assemble keys.
 */
export const busWire = {
  /**
   * `publish.lua`: appends the payloads (JSON text) to the log; returns their stream ids in order.
   * An item `{ p, tp }` also carries a traceparent (the entry's `tp` field).
   */
  async publish(c: ScriptClient, k: TopicKeys, maxBytes: number, items: readonly PublishItem[]): Promise<string[]> {
    const args: (string | number)[] = [PROTOCOL_VERSION, maxBytes, items.length];
    let traced = false;
    for (const it of items) {
      if (typeof it === 'string') args.push(it);
      else {
        args.push(it.p);
        traced = true;
      }
    }
    if (traced) for (const it of items) args.push(typeof it === 'string' ? '' : it.tp);
    return (await runScript(c, 'publish', [k.meta, k.log], args)) as string[];
  },

  /** `trim.lua`: one retention step (archive at most `limit` due entries, cut the log, expire segments). */
  async trim(c: ScriptClient, k: TopicKeys, limit = BUS_BATCH_LIMIT, segmentBytes = SEGMENT_BYTES, expireLimit = EXPIRE_LIMIT): Promise<TrimReply> {
    const r = (await runScript(c, 'trim', [k.meta, k.log, k.archive, k.segPrefix], [PROTOCOL_VERSION, limit, segmentBytes, expireLimit])) as number[];
    return { archived: r[0], trimmed: r[1], expired: r[2], more: r[3] === 1 };
  },

  /**
   * `retention.lua`: replaces the topic's retention policy (absent fields = no bound). With
   * `archiveMaxBytes` (0 = no archive, `unbounded`) the call has its optional fifth argument;
   * without it a stored byte bound is left as it is.
   */
  async retention(c: ScriptClient, k: TopicKeys, p: { maxLen?: number; maxAgeMs?: number; archiveMaxAgeMs?: number; archiveMaxBytes?: number | 'unbounded' }): Promise<void> {
    const args: (string | number)[] = [PROTOCOL_VERSION, p.maxLen ?? '', p.maxAgeMs ?? '', p.archiveMaxAgeMs ?? ''];
    if (p.archiveMaxBytes !== undefined) args.push(p.archiveMaxBytes);
    await runScript(c, 'retention', [k.meta], args);
  },
};
