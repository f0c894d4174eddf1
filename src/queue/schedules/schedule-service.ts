import { decodePayload, encodePayload, type Json } from '../../core/codec.js';
import type { EchoMqConnection } from '../../core/connection/index.js';
import { fromReplyError } from '../../core/reply-errors.js';
import { assertName, queueKeys } from '../../core/keys.js';
import { scheduleWire, type UpsertOutcome } from '../../core/wire/index.js';
import { decodeSchedule, encodeSchedule, firstTick } from './schedule-plan.js';
import type { ScheduleInfo, ScheduleOptions, ScheduleSpec } from './schedule-types.js';

/** The server clock of a connection, in epoch ms (the runtime never trusts its own clock for a tick). */
export async function serverNow(conn: EchoMqConnection): Promise<number> {
  try {
    const [s, us] = await conn.client.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  } catch (err) {
    throw fromReplyError(err);
  }
}

/**
 * Stores, replaces, removes and lists a queue's recurring schedules (docs/queue.md,
 * "Schedules"). Every write is one script call; the ticking itself is the `Scheduler`'s.
 */
export class ScheduleService {
  constructor(
    private readonly conn: EchoMqConnection,
    /** What the service reads of a queue's settings (`QueueDefaults`): its payload limit. */
    private readonly settings: (queue: string) => { readonly maxPayloadBytes: number },
  ) {}

  /**
   * Upserts schedule `name` of `queue`. Validates everything first (bad cron, zone, interval:
   * `InvalidScheduleError`; bad name: `InvalidNameError`; bad payload or options: their errors),
   * writing nothing on a refusal. The very same declaration again is `unchanged` and keeps the
   * next tick; a changed one is `replaced` and restarts from the server's now.
   */
  async schedule<T = Json>(queue: string, name: string, spec: ScheduleSpec, payload: T, opts?: ScheduleOptions): Promise<UpsertOutcome> {
    const k = queueKeys(queue);
    assertName(name, 'schedule');
    const { maxPayloadBytes } = this.settings(queue);
    const { text, stored } = encodeSchedule(spec, encodePayload(payload ?? null, maxPayloadBytes), opts);
    const first = firstTick(stored, await serverNow(this.conn));
    return scheduleWire.upsert(this.conn.scriptClient, k, name, text, Math.min(536_870_912, 6 * maxPayloadBytes + 4096), first);
  }

  /** Removes schedule `name` of `queue`; resolves to true when it existed. Jobs already written stay. */
  async unschedule(queue: string, name: string): Promise<boolean> {
    const k = queueKeys(queue);
    assertName(name, 'schedule');
    return scheduleWire.remove(this.conn.scriptClient, k, name);
  }

  /** The schedules of `queue`, by name, with their next ticks. */
  async list<T = Json>(queue: string): Promise<ScheduleInfo<T>[]> {
    const k = queueKeys(queue);
    const [specs, ticks] = await Promise.all([this.conn.client.hgetall(k.schedules), this.conn.client.zrange(k.ticks, 0, -1, 'WITHSCORES')]).catch(
      (err: unknown) => {
        throw fromReplyError(err);
      },
    );
    const next = new Map<string, number>();
    for (let i = 0; i < ticks.length; i += 2) next.set(ticks[i], Number(ticks[i + 1]));
    return Object.keys(specs)
      .sort()
      .map((name) => {
        const s = decodeSchedule(specs[name]);
        const at = next.get(name);
        return {
          name,
          ...(s.cron !== undefined ? { cron: s.cron, ...(s.tz !== undefined ? { tz: s.tz } : {}) } : { every: s.every }),
          payload: decodePayload<T>(s.payload) as T,
          missed: s.missed,
          graceMs: s.grace,
          ...(s.attempts !== undefined ? { attempts: s.attempts } : {}),
          ...(s.backoff !== undefined ? { backoff: s.backoff } : {}),
          next: at === undefined ? null : new Date(at),
        };
      });
  }
}
