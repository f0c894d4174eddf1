/**
 * Schedule controls (docs/queue.md "Schedules"): `limit`, `startAt` / `endAt`, run-now, and an
 * upsert that changes only the payload keeps the tick grid. Two schedulers race on every tick:
 * each tick still becomes exactly one job.
 */
import { queueKeys } from '../../src/core/keys.js';
import { Scheduler } from '../../src/queue/schedules/scheduler.js';
import { serverNow } from '../../src/queue/schedules/schedule-service.js';
import type { TickRecord } from '../../src/queue/schedules/schedule-types.js';
import { refusedUnchanged } from '../helpers/refusals.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const f = queueFixture();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Two racing schedulers on `q` for `ms`; resolves to the ticks they wrote (or skipped). */
async function race(q: string, ms: number): Promise<TickRecord[]> {
  const seen: TickRecord[] = [];
  const loops = [0, 1].map(() => new Scheduler(f.conn, { maxSleepMs: 20, onTick: (t) => seen.push(t) }));
  for (const s of loops) {
    s.watch(q);
    s.start();
  }
  await sleep(ms);
  await Promise.all(loops.map((s) => s.stop()));
  return seen;
}

/** Jobs the queue holds (pending or scheduled). */
async function jobs(q: string): Promise<number> {
  const k = queueKeys(q);
  return (await f.raw.llen(k.pending)) + (await f.raw.zcard(k.scheduled));
}

describe('schedule controls', () => {
  it('limit: fires at most N times across racing instances, then the schedule ends', async () => {
    const q = randomQueue('slim');
    expect(await f.queues.schedule(q, 'thrice', { every: 60 }, { n: 1 }, { limit: 3 })).toBe('created');
    const seen = await race(q, 700);
    expect(seen.filter((t) => t.jobId)).toHaveLength(3);
    expect(await jobs(q)).toBe(3);
    const [info] = await f.queues.schedules(q);
    expect(info).toMatchObject({ name: 'thrice', limit: 3, fired: 3, next: null });
    // Declared again at boot (the same text): the tick is re-armed, fires no job and ends again.
    expect(await f.queues.schedule(q, 'thrice', { every: 60 }, { n: 1 }, { limit: 3 })).toBe('unchanged');
    await race(q, 300);
    expect(await jobs(q)).toBe(3);
    expect((await f.queues.schedules(q))[0].next).toBeNull();
    // A higher limit (payload and options only: the grid is kept) resumes it up to the new limit.
    expect(await f.queues.schedule(q, 'thrice', { every: 60 }, { n: 1 }, { limit: 4 })).toBe('updated');
    await race(q, 500);
    expect(await jobs(q)).toBe(4);
  });

  it('startAt / endAt: no tick before the start or after the end', async () => {
    const q = randomQueue('swin');
    const now = await serverNow(f.conn);
    const start = now + 300;
    const end = start + 400;
    await f.queues.schedule(q, 'window', { every: 100 }, null, { startAt: start, endAt: new Date(end) });
    expect((await f.queues.schedules(q))[0].next?.getTime()).toBe(start);
    const seen = await race(q, 1300);
    const ticks = seen.filter((t) => t.jobId).map((t) => t.tick);
    expect(ticks).toEqual([start, start + 100, start + 200, start + 300, start + 400]);
    expect(await jobs(q)).toBe(5);
    const [info] = await f.queues.schedules(q);
    expect(info.next).toBeNull();
    expect(info.startAt?.getTime()).toBe(start);
    expect(info.endAt?.getTime()).toBe(end);
  });

  it('a schedule declared after its end is stored, ends at its first tick and writes nothing', async () => {
    const q = randomQueue('sold');
    const now = await serverNow(f.conn);
    await f.queues.schedule(q, 'over', { cron: '* * * * * *' }, null, { endAt: now - 1000 });
    await race(q, 300);
    expect(await jobs(q)).toBe(0);
    expect((await f.queues.schedules(q))[0].next).toBeNull();
  });

  it('a payload-only change keeps the next tick; a timing change restarts it', async () => {
    const q = randomQueue('sgrid');
    const k = queueKeys(q);
    await f.queues.schedule(q, 'beat', { every: 60_000 }, { v: 1 });
    const tick = await f.raw.zscore(k.ticks, 'beat');
    await sleep(20);
    expect(await f.queues.schedule(q, 'beat', { every: 60_000 }, { v: 2 }, { attempts: 3, endAt: Date.now() + 3_600_000 })).toBe('updated');
    expect(await f.raw.zscore(k.ticks, 'beat')).toBe(tick);
    expect((await f.queues.schedules(q))[0]).toMatchObject({ payload: { v: 2 }, attempts: 3 });
    expect(await f.queues.schedule(q, 'beat', { every: 30_000 }, { v: 2 })).toBe('replaced');
    expect(await f.raw.zscore(k.ticks, 'beat')).not.toBe(tick);
  });

  it('run-now: one job now with the payload and options, the tick grid and the count untouched', async () => {
    const q = randomQueue('snow');
    const k = queueKeys(q);
    await f.queues.schedule(q, 'report', { every: 60_000 }, { r: 1 }, { attempts: 2, limit: 1 });
    const tick = await f.raw.zscore(k.ticks, 'report');
    const id = await f.queues.runScheduleNow(q, 'report');
    const again = await f.queues.runScheduleNow(q, 'report');
    expect(again).not.toBe(id);
    expect(await f.raw.lrange(k.pending, 0, -1)).toEqual([again, id]);
    const job = await f.queues.getJob(q, id);
    expect(job).toMatchObject({ status: 'pending', payload: { r: 1 }, maxAttempts: 2 });
    expect(await f.raw.zscore(k.ticks, 'report')).toBe(tick);
    expect((await f.queues.schedules(q))[0].fired).toBe(0);
    await refusedUnchanged(f.raw, q, 'EMQ_NOT_FOUND', () => f.queues.runScheduleNow(q, 'nope'));
  });

  it('refuses bad limit, startAt and endAt with EMQ_BAD_SCHEDULE, writing nothing', async () => {
    const q = randomQueue('sbad');
    await f.queues.schedule(q, 'ok', { every: 60_000 }, null);
    for (const opts of [{ limit: 0 }, { limit: 1.5 }, { startAt: -1 }, { endAt: Number.NaN }, { startAt: 2000, endAt: 1000 }]) {
      await refusedUnchanged(f.raw, q, 'EMQ_BAD_SCHEDULE', () => f.queues.schedule(q, 'ok', { every: 60_000 }, null, opts));
    }
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () => f.queues.schedule(q, 'ok', { every: 60_000 }, null, { limt: 3 } as never));
  });

  it('removing a schedule removes its count', async () => {
    const q = randomQueue('sdel');
    const k = queueKeys(q);
    await f.queues.schedule(q, 'once', { every: 50 }, null, { limit: 1 });
    await race(q, 300);
    await eventually(async () => (await f.raw.hget(k.fires, 'once')) === '1', 2000, 'the count');
    expect(await f.queues.unschedule(q, 'once')).toBe(true);
    expect(await f.raw.exists(k.fires)).toBe(0);
  });
});
