import { decodePayload, encodePayload, type Json, type PayloadCodec } from '../../core/codec.js';
import type { EchoMqConnection } from '../../core/connection/index.js';
import { IdCollisionError, NotFoundError } from '../../core/errors.js';
import { fromReplyError } from '../../core/reply-errors.js';
import { assertName, queueKeys } from '../../core/keys.js';
import { scheduleWire, wire, type UpsertOutcome } from '../../core/wire/index.js';
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
    /** What the service reads of a queue's settings (`QueueDefaults`): its payload limit and codec. */
    private readonly settings: (queue: string) => { readonly maxPayloadBytes: number; readonly codec?: PayloadCodec },
  ) {}

  /**
   * Upserts schedule `name` of `queue`. Validates everything first (bad cron, zone, interval:
   * `InvalidScheduleError`; bad name: `InvalidNameError`; bad payload or options: their errors),
   * writing nothing on a refusal. The very same declaration again is `unchanged` and keeps the
   * next tick; one that changes only the payload or options (attempts, backoff, missed, grace,
   * limit, endAt) is `updated` and keeps it too; a changed timing (cron, tz, every, startAt) is
   * `replaced` and restarts from the server's now (its count of fires too).
   */
  async schedule<T = Json>(queue: string, name: string, spec: ScheduleSpec, payload: T, opts?: ScheduleOptions): Promise<UpsertOutcome> {
    const k = queueKeys(queue);
    assertName(name, 'schedule');
    const { maxPayloadBytes, codec } = this.settings(queue);
    const { text, stored } = encodeSchedule(spec, encodePayload(payload ?? null, maxPayloadBytes, codec), opts);
    const first = firstTick(stored, await serverNow(this.conn));
    return scheduleWire.upsert(this.conn.scriptClient, k, name, text, Math.min(536_870_912, 6 * maxPayloadBytes + 4096), first);
  }

  /** Removes schedule `name` of `queue`; resolves to true when it existed. Jobs already written stay. */
  async unschedule(queue: string, name: string): Promise<boolean> {
    const k = queueKeys(queue);
    assertName(name, 'schedule');
    return scheduleWire.remove(this.conn.scriptClient, k, name);
  }

  /**
   * Enqueues one job of schedule `name` now (its payload, attempts and backoff), outside its tick
   * grid: the next tick, the count of fires and the limit are untouched, and the job is a plain
   * enqueue (one script call), so no tick is written twice. Resolves to the job's id;
   * `NotFoundError` when there is no such schedule.
   */
  async runNow(queue: string, name: string): Promise<string> {
    const k = queueKeys(queue);
    assertName(name, 'schedule');
    let text: string | null;
    try {
      text = await this.conn.client.hget(k.schedules, name);
    } catch (err) {
      throw fromReplyError(err);
    }
    if (text === null) throw new NotFoundError(`queue ${queue} has no schedule "${name}"`);
    const s = decodeSchedule(text);
    await this.conn.ids.ready();
    const { maxPayloadBytes } = this.settings(queue);
    for (let attempt = 0; ; attempt++) {
      const id = this.conn.ids.next('job');
      const [r] = await wire.enqueue(this.conn.scriptClient, k, Math.max(maxPayloadBytes, Buffer.byteLength(s.payload)), [
        { id, payload: s.payload, delayMs: 0, runAtMs: 0, maxAttempts: s.attempts, backoff: s.backoff },
      ]);
      if (r === 1) return id;
      if (attempt === 4) throw new IdCollisionError(`run-now of schedule ${queue}/${name}: a freshly minted id was taken 5 times in a row (last ${id})`);
    }
  }

  /** The schedules of `queue`, by name, with their next ticks. */
  async list<T = Json>(queue: string): Promise<ScheduleInfo<T>[]> {
    const k = queueKeys(queue);
    const [specs, ticks, fires] = await Promise.all([
      this.conn.client.hgetall(k.schedules),
      this.conn.client.zrange(k.ticks, 0, -1, 'WITHSCORES'),
      this.conn.client.hgetall(k.fires),
    ]).catch((err: unknown) => {
      throw fromReplyError(err);
    });
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
          ...(s.limit !== undefined ? { limit: s.limit } : {}),
          ...(s.start !== undefined ? { startAt: new Date(s.start) } : {}),
          ...(s.end !== undefined ? { endAt: new Date(s.end) } : {}),
          fired: Number(fires[name] ?? 0),
          next: at === undefined ? null : new Date(at),
        };
      });
  }
}
