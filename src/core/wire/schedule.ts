import type { QueueKeys } from '../keys.js';
import { PROTOCOL_VERSION, runScript, type ScriptClient } from '../scripts.js';

/**
 * What an upsert did (schedule.lua `set`): `replaced` restarted the tick grid; `updated` replaced
 * the payload or options of a schedule of the same timing, keeping its next tick.
 */
export type UpsertOutcome = 'unchanged' | 'created' | 'replaced' | 'updated';
/** What a tick call did (tick.lua). */
export type TickOutcome = 'stale' | 'written' | 'skipped' | 'id-taken';

const UPSERTED: Record<number, UpsertOutcome> = { 0: 'unchanged', 1: 'created', 2: 'replaced', 3: 'updated' };
const TICKED: Record<number, TickOutcome> = { 0: 'stale', 1: 'written', 2: 'skipped', [-1]: 'id-taken' };

/** One tick call: the compare-and-set inputs and the job it writes (`id` absent: advance only). */
export interface WireTick {
  readonly name: string;
  /** SHA1 (hex) of the spec text the caller computed from. */
  readonly specSha: string;
  /** The next tick the caller read (epoch ms). */
  readonly due: number;
  /** The next tick after this one (epoch ms), or 0: no more ticks. */
  readonly next: number;
  /** The job's id; absent: a missed tick skipped (no job). */
  readonly id?: string;
  /** The job's run-at (epoch ms, server clock; 0 = now). */
  readonly runAt?: number;
}

/** Typed wrappers of the schedule scripts; every key array is built here from the key grammar. */
export const scheduleWire = {
  /**
   * Upserts one schedule's spec text; `firstTick` applies only when the spec is new or its timing
   * (cron, tz, every, start) changed: a spec of the same timing keeps its next tick (keep mode).
   */
  async upsert(c: ScriptClient, k: QueueKeys, name: string, spec: string, maxBytes: number, firstTick: number): Promise<UpsertOutcome> {
    const r = (await runScript(c, 'schedule', [k.meta, k.schedules, k.ticks, k.fires], [PROTOCOL_VERSION, 'set', name, spec, maxBytes, firstTick, 1])) as number;
    return UPSERTED[r];
  },

  /** Removes one schedule (and its count of fires); true when it existed. */
  async remove(c: ScriptClient, k: QueueKeys, name: string): Promise<boolean> {
    return ((await runScript(c, 'schedule', [k.meta, k.schedules, k.ticks, k.fires], [PROTOCOL_VERSION, 'del', name])) as number) === 1;
  },

  /** Turns a due tick into at most one job and advances the schedule, if the tick is still the caller's. */
  async tick(c: ScriptClient, k: QueueKeys, t: WireTick): Promise<TickOutcome> {
    const r = (await runScript(
      c,
      'tick',
      [k.meta, k.pending, k.scheduled, k.wake, k.data, k.opts, k.events, k.schedules, k.ticks, k.fires],
      [PROTOCOL_VERSION, t.name, t.specSha, t.due, t.next, t.id === undefined ? '0' : '1', t.id ?? '', t.id === undefined ? 0 : (t.runAt ?? 0)],
    )) as number;
    return TICKED[r];
  },
};
