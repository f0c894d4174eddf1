import type { Redis } from 'iovalkey';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { queueKeys } from '../../src/core/keys.js';
import { scheduleWire } from '../../src/core/wire/schedule.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { encodeSchedule, firstTick } from '../../src/queue/schedules/schedule-plan.js';
import { Scheduler } from '../../src/queue/schedules/scheduler.js';
import { serverNow } from '../../src/queue/schedules/schedule-service.js';
import type { ScheduleOptions, ScheduleSpec, TickRecord } from '../../src/queue/schedules/schedule-types.js';
import { eventually, openConnection, randomQueue, rawClient } from '../helpers/valkey.js';

const iso = (t: number) => new Date(t).toISOString().slice(0, 16);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Upserts a schedule whose first tick follows a chosen (fake) instant instead of the server's now. */
async function upsertAt(conn: EchoMqConnection, q: string, name: string, spec: ScheduleSpec, at: number, opts: ScheduleOptions = {}): Promise<void> {
  const { text, stored } = encodeSchedule(spec, '{}', opts);
  await scheduleWire.upsert(conn.scriptClient, queueKeys(q), name, text, 1 << 20, firstTick(stored, at));
}

describe('schedules on a shifted clock: DST transitions and missed ticks', () => {
  let conn: EchoMqConnection;
  let raw: Redis;
  beforeAll(async () => {
    conn = await openConnection();
    raw = rawClient();
  });
  afterAll(async () => {
    await conn.close();
    await raw.quit();
  });

  /**
   * Runs two racing schedulers on a clock that starts at `from` and runs 1800× (one real second
   * = 30 minutes) until `to`; resolves to the ticks they took, per schedule name.
   */
  async function race(q: string, from: string, to: string): Promise<Record<string, string[]>> {
    const start = await serverNow(conn);
    const base = Date.parse(from);
    const end = Date.parse(to);
    const clock = async () => Math.min(end, base + ((await serverNow(conn)) - start) * 1800);
    const seen: TickRecord[] = [];
    const loops = [0, 1].map(() => new Scheduler(conn, { clock, maxSleepMs: 20, onTick: (t) => seen.push(t) }));
    for (const s of loops) {
      s.watch(q);
      s.start();
    }
    await sleep(((end - base) / 1800) + 400);
    await Promise.all(loops.map((s) => s.stop()));
    const out: Record<string, string[]> = {};
    for (const t of seen.sort((a, b) => a.tick - b.tick)) (out[t.name] ??= []).push(iso(t.tick));
    // Each tick record is a job: the queue holds exactly those jobs.
    expect(await raw.llen(queueKeys(q).pending)).toBe(seen.length);
    expect(seen.every((t) => t.jobId)).toBe(true);
    return out;
  }

  it('spring forward in Europe/Berlin (2026-03-29): a skipped wall time fires once at the gap end, hourly follows real time', async () => {
    const q = randomQueue('dst');
    const from = Date.parse('2026-03-28T23:45:00Z');
    const day = { graceMs: 86_400_000 } as const; // the fast clock makes every tick "late" by seconds
    await upsertAt(conn, q, 'half', { cron: '*/30 2 * * *', tz: 'Europe/Berlin' }, from, day);
    await upsertAt(conn, q, 'daily', { cron: '30 2 * * *', tz: 'Europe/Berlin' }, from, day);
    await upsertAt(conn, q, 'hourly', { cron: '0 * * * *', tz: 'Europe/Berlin' }, from, day);
    const ticks = await race(q, '2026-03-28T23:45:00Z', '2026-03-29T02:15:00Z');
    expect(ticks).toEqual({
      half: ['2026-03-29T01:00'], // 02:00 and 02:30 do not exist: one tick at 03:00 CEST
      daily: ['2026-03-29T01:00'],
      hourly: ['2026-03-29T00:00', '2026-03-29T01:00', '2026-03-29T02:00'],
    });
  }, 30_000);

  it('fall back in Europe/Berlin (2026-10-25): a repeated wall time fires once, hourly fires every real hour', async () => {
    const q = randomQueue('dst');
    const from = Date.parse('2026-10-24T23:45:00Z');
    const day = { graceMs: 86_400_000 } as const;
    await upsertAt(conn, q, 'half', { cron: '*/30 2 * * *', tz: 'Europe/Berlin' }, from, day);
    await upsertAt(conn, q, 'daily', { cron: '30 2 * * *', tz: 'Europe/Berlin' }, from, day);
    await upsertAt(conn, q, 'hourly', { cron: '0 * * * *', tz: 'Europe/Berlin' }, from, day);
    const ticks = await race(q, '2026-10-24T23:45:00Z', '2026-10-25T02:45:00Z');
    expect(ticks).toEqual({
      half: ['2026-10-25T00:00', '2026-10-25T00:30'], // 02:00 and 02:30 CEST; not again in CET
      daily: ['2026-10-25T00:30'],
      hourly: ['2026-10-25T00:00', '2026-10-25T01:00', '2026-10-25T02:00'],
    });
  }, 30_000);

  it.each([
    ['skip', 0],
    ['once', 1],
  ] as const)('ticks missed while no instance ran: policy %s writes %i job(s) for them, then ticks on time', async (missed, jobs) => {
    const q = randomQueue('missed');
    const queues = new QueueService(conn);
    // A grace of 1 s: the on-time ticks below must not be missed by a scheduler that a loaded
    // machine stalls for a few hundred ms (that would be a missed tick, rightly skipped).
    await queues.schedule(q, 'beat', { every: 100 }, { m: missed }, { missed, graceMs: 1000 });
    await sleep(2500); // everything down: ~24 ticks pass, ~14 of them past the grace
    const seen: TickRecord[] = [];
    const s = new Scheduler(conn, { onTick: (t) => seen.push(t), logger: { warn: () => undefined } });
    const now = await serverNow(conn);
    expect(await s.round(q)).toBe(0); // it advanced, and looks again at once
    expect(seen).toHaveLength(1);
    expect(Boolean(seen[0].jobId)).toBe(jobs === 1);
    const next = Number(await raw.zscore(queueKeys(q).ticks, 'beat'));
    // The schedule now stands at the first tick within the grace window: on time from here.
    expect(next).toBeGreaterThanOrEqual(now - 1000);
    expect(next).toBeLessThanOrEqual(now + 100);
    expect(await raw.llen(queueKeys(q).pending)).toBe(jobs);
    s.watch(q);
    s.start();
    try {
      await eventually(() => seen.length >= 6, 5000, 'on-time ticks');
    } finally {
      await s.stop();
    }
    expect(seen.slice(1).every((t) => t.jobId)).toBe(true);
    const counts = await queues.counts(q);
    expect(counts.pending + counts.scheduled).toBe(seen.filter((t) => t.jobId).length);
  }, 20_000);
});
