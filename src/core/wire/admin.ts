import { globalKeys, type QueueKeys, type TopicKeys } from '../keys.js';
import { PROTOCOL_VERSION, runScript, type ScriptClient } from '../scripts.js';

/** A registry of announced names (`announce.lua`). */
export type RegistryKind = 'queues' | 'topics' | 'caches';
/** A status whose jobs `purge.lua` deletes. */
export type PurgeableStatus = 'done' | 'dead' | 'cancelled';
/** What a single-job admin script did: 1 applied, 0 refused by the job's state, -1 no such job. */
export type AdminReply = 1 | 0 | -1;

/** A bounded bulk call's reply: how many jobs it moved, and whether more remain. */
export interface BulkReply {
  /** The jobs this call moved (drained, retried, purged). */
  readonly count: number;
  /** True when the call stopped at its limit: call again for the rest. */
  readonly more: boolean;
}

const bulk = (r: unknown): BulkReply => {
  const [count, more] = r as [number, number];
  return { count, more: more === 1 };
};

/**
 * Typed wrappers of the admin scripts (docs/admin.md), one per script; every key array is built
 * here from the key grammar.
 */
export const adminWire = {
  /** Pauses (`pause`) or resumes a queue fleet-wide; true when its state changed. */
  async pause(c: ScriptClient, k: QueueKeys, action: 'pause' | 'resume'): Promise<boolean> {
    return (await runScript(c, 'pause', [k.meta, k.wake], [PROTOCOL_VERSION, action])) === 1;
  },

  /** Drops up to `limit` waiting jobs (removed with their rows; flow parents told `cancelled`). */
  async drain(c: ScriptClient, k: QueueKeys, limit: number): Promise<BulkReply> {
    return bulk(await runScript(c, 'drain', [k.meta, k.pending, k.data, k.opts, k.jobPrefix, k.levels, k.laneRing, k.outbox, k.outdue], [PROTOCOL_VERSION, limit]));
  },

  /** Retries one dead job by hand (fresh attempts, due now). */
  async reviveOne(c: ScriptClient, k: QueueKeys, id: string): Promise<AdminReply> {
    const r = (await runScript(c, 'revive', [k.meta, k.dead, k.scheduled, k.wake, k.jobPrefix, k.job(id)], [PROTOCOL_VERSION, 'id', id])) as number[];
    return r[0] as AdminReply;
  },

  /** Retries the oldest `limit` dead jobs. */
  async reviveAll(c: ScriptClient, k: QueueKeys, limit: number): Promise<BulkReply> {
    return bulk(await runScript(c, 'revive', [k.meta, k.dead, k.scheduled, k.wake, k.jobPrefix], [PROTOCOL_VERSION, 'all', limit]));
  },

  /** Makes a scheduled job due now. */
  async promote(c: ScriptClient, k: QueueKeys, id: string): Promise<AdminReply> {
    return (await runScript(c, 'promote', [k.meta, k.scheduled, k.wake, k.data, k.jobPrefix, k.job(id)], [PROTOCOL_VERSION, id])) as AdminReply;
  },

  /** Removes one job that is not running, with its row and payload. */
  async remove(c: ScriptClient, k: QueueKeys, id: string): Promise<AdminReply> {
    return (await runScript(
      c,
      'remove',
      [k.meta, k.scheduled, k.done, k.dead, k.cancelled, k.data, k.opts, k.jobPrefix, k.job(id)],
      [PROTOCOL_VERSION, id],
    )) as AdminReply;
  },

  /** Deletes up to `limit` jobs of `status` that finished at least `ageMs` ago (server clock). */
  async purge(c: ScriptClient, k: QueueKeys, status: PurgeableStatus, ageMs: number, limit: number): Promise<BulkReply> {
    return bulk(await runScript(c, 'purge', [k.meta, k[status], k.data, k.jobPrefix], [PROTOCOL_VERSION, status, ageMs, limit]));
  },

  /** Adds names to (or removes them from) a registry; resolves to how many changed. */
  async announce(c: ScriptClient, kind: RegistryKind, action: 'add' | 'del', names: readonly string[]): Promise<number> {
    return (await runScript(c, 'announce', [globalKeys[kind]], [PROTOCOL_VERSION, action, ...names])) as number;
  },
};

/** Typed wrapper of `bus-dead.lua`: replays (to the topic) or purges dead letters. */
export const busAdminWire = {
  /** Replays or purges the given dead letters (stream ids), or the oldest `n` when none are given. */
  async dead(c: ScriptClient, k: TopicKeys, action: 'replay' | 'purge', n: number, ids: readonly string[] = []): Promise<BulkReply> {
    return bulk(await runScript(c, 'bus-dead', [k.meta, k.log, k.dead], [PROTOCOL_VERSION, action, ids.length || n, ...ids]));
  },
};
