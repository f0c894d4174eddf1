import { QueueAdmin, type JobCursor, type JobSummary } from '../../src/index.js';
import { globalKeys, queueKeys, wire } from '../../src/protocol.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { startConsumer } from '../helpers/consumers.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const f = queueFixture();
let admin: QueueAdmin;
beforeAll(() => {
  admin = new QueueAdmin(f.conn, f.queues);
});
const DEFAULTS = { maxAttempts: 3, backoff: 'f:50', deadCap: 1000 };

/** Enqueues `n` jobs, claims them and ends each as asked: resolves to their ids in enqueue order. */
async function finished(q: string, n: number, end: 'done' | 'dead'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await f.queues.enqueue(q, { i }));
  const k = queueKeys(q);
  const { jobs } = await wire.claim(f.conn.scriptClient, k, n, 30_000);
  if (end === 'done') await wire.complete(f.conn.scriptClient, k, 1000, jobs.map((j) => ({ id: j.id, token: j.token, result: '"ok"' })));
  else for (const j of jobs) await wire.retry(f.conn.scriptClient, k, { id: j.id, token: j.token, error: 'Error: boom', fatal: true }, DEFAULTS);
  return ids;
}

/** Every page of a listing, following `next`. */
async function allPages(q: string, status: 'pending' | 'done' | 'dead', limit: number): Promise<JobSummary[][]> {
  const pages: JobSummary[][] = [];
  let cursor: JobCursor | undefined;
  do {
    const page = await admin.jobs(q, { status, limit, cursor });
    pages.push(page.jobs);
    cursor = page.next;
  } while (cursor);
  return pages;
}

describe('the registry of known queues', () => {
  it('a producer announces a queue at its first enqueue, a consumer at its start; pages go in name order', async () => {
    const [a, b] = [randomQueue('reg-a'), randomQueue('reg-b')];
    await f.queues.enqueue(a, { x: 1 });
    const { consumer } = await startConsumer(f.conn, b, () => undefined);
    f.consumers.push(consumer);
    await eventually(async () => (await f.raw.zscore(globalKeys.queues, a)) !== null && (await f.raw.zscore(globalKeys.queues, b)) !== null, 5000, 'both announced');
    // Pages of 1 from just before `a` (other suites' queues share the registry): a, then b.
    const first = await admin.list({ after: 'reg-', limit: 1000 });
    const names = first.items.map((i) => i.name);
    expect(names).toEqual([...names].sort());
    const one = await admin.list({ after: a.slice(0, -1), limit: 1 });
    expect([one.items.map((i) => i.name), one.next]).toEqual([[a], a]);
    expect((await admin.list({ after: b.slice(0, -1), limit: 1 })).items.map((i) => i.name)).toEqual([b]);
    expect(await admin.info(a)).toEqual({ name: a, paused: false, pausedLanes: [], counts: expect.objectContaining({ pending: 1 }) });
  });

  it('a queue whose keys cannot be read (a key of another type) does not fail the page: it carries the error', async () => {
    const q = randomQueue('reg-broken');
    await f.queues.enqueue(q, { x: 1 });
    await f.raw.del(queueKeys(q).scheduled);
    await f.raw.set(queueKeys(q).scheduled, 'not a zset');
    await eventually(async () => (await f.raw.zscore(globalKeys.queues, q)) !== null, 5000, 'announced');
    const page = await admin.list({ after: q.slice(0, -1), limit: 1 });
    expect(page.items).toEqual([{ name: q, paused: false, pausedLanes: [], counts: expect.objectContaining({ pending: 0 }), error: expect.stringMatching(/^EMQ_WRONGTYPE /), problem: 'unreadable' }]);
    await expect(admin.info(q)).rejects.toMatchObject({ code: 'EMQ_WRONGTYPE' });
  });
});

describe('pause and resume', () => {
  it('a paused queue claims nothing and writes nothing; resume pushes a wake marker', async () => {
    const q = randomQueue('pause');
    await f.queues.enqueue(q, { a: 1 });
    await f.queues.enqueue(q, { b: 1 }, { delay: 1 });
    await new Promise((r) => setTimeout(r, 20));
    const k = queueKeys(q);
    await f.raw.del(k.wake);
    expect([await admin.pause(q), await admin.pause(q)]).toEqual([true, false]);
    expect((await admin.info(q)).paused).toBe(true);
    const before = await f.raw.dump(k.pending);
    const reply = await wire.claim(f.conn.scriptClient, k, 10, 30_000);
    expect(reply).toEqual({ jobs: [], waitMs: -2 });
    expect([await f.raw.dump(k.pending), await f.raw.zcard(k.scheduled)]).toEqual([before, 1]); // not even promoted
    expect([await admin.resume(q), await admin.resume(q)]).toEqual([true, false]);
    expect(await f.raw.lrange(k.wake, 0, -1)).toEqual(['1']);
    expect((await wire.claim(f.conn.scriptClient, k, 10, 30_000)).jobs).toHaveLength(2);
  });

  it('two busy consumers stop within one claim of the pause and start again on resume', async () => {
    const q = randomQueue('pause2');
    const started: number[] = [];
    const handler = async () => {
      started.push(Date.now());
      await new Promise((r) => setTimeout(r, 20));
    };
    for (let i = 0; i < 2; i++) {
      const { consumer } = await startConsumer(f.conn, q, handler, { concurrency: 1, prefetch: 1 });
      f.consumers.push(consumer);
    }
    await f.queues.enqueueMany(q, Array.from({ length: 300 }, (_, i) => ({ payload: { i } })));
    await eventually(() => started.length >= 10, 10_000, 'consumers busy');
    await admin.pause(q);
    const pausedAt = started.length;
    await new Promise((r) => setTimeout(r, 600));
    // Each consumer holds at most concurrency + prefetch = 2 jobs claimed before its next claim.
    expect(started.length - pausedAt).toBeLessThanOrEqual(4);
    const still = started.length;
    await new Promise((r) => setTimeout(r, 400));
    expect(started.length).toBe(still);
    expect((await admin.info(q)).counts.pending).toBe(300 - still);
    await admin.resume(q);
    await eventually(() => started.length === 300, 20_000, 'all processed after resume');
  });
});

describe('drain', () => {
  it('drops waiting jobs in bounded calls (every lane), removing their rows; scheduled and finished jobs stay', async () => {
    const q = randomQueue('drain');
    const k = queueKeys(q);
    await finished(q, 1, 'done');
    await f.queues.enqueueMany(q, [{ payload: 1 }, { payload: 2, opts: { priority: 5 } }, { payload: 3, opts: { lane: 'g1' } }, { payload: 4 }, { payload: 5, opts: { lane: 'g2' } }]);
    const later = await f.queues.enqueue(q, { later: 1 }, { delay: 600_000 });
    const calls = [await admin.drain(q, { limit: 2 }), await admin.drain(q, { limit: 2 }), await admin.drain(q, { limit: 2 })];
    expect(calls.map((c) => c.count)).toEqual([2, 2, 1]);
    expect(calls.map((c) => c.more)).toEqual([true, true, false]);
    expect(await admin.drain(q)).toEqual({ count: 0, more: false });
    expect(await f.queues.counts(q)).toEqual({ scheduled: 1, pending: 0, active: 0, done: 1, dead: 0, cancelled: 0, waiting: 0 });
    expect(await f.raw.hkeys(k.data)).toEqual(expect.arrayContaining([later]));
    expect(await f.raw.hlen(k.data)).toBe(2); // the done job's and the scheduled job's payloads
    expect(await f.raw.zcard(k.levels)).toBe(0);
  });

  it('a ghost met by drain is dropped as claim drops it (the counts stay exact)', async () => {
    const q = randomQueue('drain-ghost');
    const [a, b] = await f.queues.enqueueMany(q, [{ payload: 1 }, { payload: 2 }]);
    expect(await f.queues.cancel(q, a)).toBe('cancelled');
    expect(await admin.drain(q)).toEqual({ count: 1, more: false });
    expect(await f.queues.counts(q)).toMatchObject({ pending: 0, cancelled: 1 });
    expect(await f.raw.hget(queueKeys(q).meta, 'ghosts')).toBe('0');
    expect((await f.queues.getJob(q, a))?.status).toBe('cancelled');
    expect(await f.queues.getJob(q, b)).toBeNull();
  });
});

describe('job listings: newest first, cursor pages', () => {
  it('done jobs finished in one call (one instant) page by id, newest first, without gaps or repeats', async () => {
    const q = randomQueue('list');
    const ids = await finished(q, 7, 'done');
    const pages = await allPages(q, 'done', 3);
    expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(pages.flat().map((j) => j.id)).toEqual([...ids].reverse());
    expect(pages[0][0]).toMatchObject({ status: 'done', attempts: 1, createdAt: expect.any(Date), at: expect.any(Date) });
  });

  it('a page continues after its cursor job left the index', async () => {
    const q = randomQueue('list-gone');
    const ids = await finished(q, 5, 'dead');
    const first = await admin.jobs(q, { status: 'dead', limit: 2 });
    expect(first.jobs.map((j) => j.id)).toEqual([ids[4], ids[3]]);
    expect(first.jobs[0].error).toBe('Error: boom');
    expect(await admin.remove(q, ids[3])).toBe(true);
    const second = await admin.jobs(q, { status: 'dead', limit: 2, cursor: first.next });
    expect(second.jobs.map((j) => j.id)).toEqual([ids[2], ids[1]]);
  });

  it('pending pages newest first, and jobs enqueued between pages do not repeat old ones', async () => {
    const q = randomQueue('list-pending');
    const ids = await f.queues.enqueueMany(q, [1, 2, 3, 4, 5].map((payload) => ({ payload })));
    const first = await admin.jobs(q, { status: 'pending', limit: 2 });
    expect(first.jobs.map((j) => j.id)).toEqual([ids[4], ids[3]]);
    await f.queues.enqueueMany(q, [{ payload: 6 }, { payload: 7 }]);
    const second = await admin.jobs(q, { status: 'pending', limit: 2, cursor: first.next });
    expect(second.jobs.map((j) => j.id)).toEqual([ids[2], ids[1]]);
    const third = await admin.jobs(q, { status: 'pending', limit: 2, cursor: second.next });
    expect([third.jobs.map((j) => j.id), third.next]).toEqual([[ids[0]], undefined]);
  });
});

describe('one job: inspect, retry, promote, remove, purge', () => {
  it('inspects a job with its result, attempts and timings', async () => {
    const q = randomQueue('inspect');
    const [id] = await finished(q, 1, 'done');
    expect(await admin.job(q, id)).toMatchObject({ id, status: 'done', attempts: 1, result: 'ok', payload: { i: 0 }, finishedAt: expect.any(Date) });
  });

  it('retries a dead job with fresh attempts (claimed again as attempt 1); a job that is not dead is left alone', async () => {
    const q = randomQueue('retry');
    const [id, other] = await finished(q, 2, 'dead');
    expect(await admin.retry(q, id)).toBe(true);
    expect(await admin.job(q, id)).toMatchObject({ status: 'scheduled', attempts: 0, error: 'Error: boom' });
    expect(await admin.retry(q, id)).toBe(false);
    const { jobs } = await wire.claim(f.conn.scriptClient, queueKeys(q), 10, 30_000);
    expect(jobs.map((j) => [j.id, j.attempt])).toEqual([[id, 1]]);
    expect((await admin.job(q, other)).status).toBe('dead');
  });

  it('retries every dead job in bounded calls', async () => {
    const q = randomQueue('retry-all');
    await finished(q, 5, 'dead');
    expect([await admin.retryDead(q, { limit: 3 }), await admin.retryDead(q, { limit: 3 })]).toEqual([{ count: 3, more: true }, { count: 2, more: false }]);
    expect(await f.queues.counts(q)).toMatchObject({ dead: 0, scheduled: 5 });
    expect((await wire.claim(f.conn.scriptClient, queueKeys(q), 10, 30_000)).jobs).toHaveLength(5);
  });

  it('promotes a delayed job: the next claim takes it', async () => {
    const q = randomQueue('promote');
    const id = await f.queues.enqueue(q, { late: 1 }, { delay: 3_600_000 });
    const now = await f.queues.enqueue(q, { now: 1 });
    expect(await admin.promote(q, now)).toBe(false);
    expect(await admin.promote(q, id)).toBe(true);
    const { jobs } = await wire.claim(f.conn.scriptClient, queueKeys(q), 10, 30_000);
    expect(jobs.map((j) => j.id).sort()).toEqual([id, now].sort());
  });

  it('removes a finished or a pending job with everything it holds; a running job is refused', async () => {
    const q = randomQueue('remove');
    const k = queueKeys(q);
    const [done] = await finished(q, 1, 'done');
    const [pending, running] = await f.queues.enqueueMany(q, [{ payload: 'p' }, { payload: 'r' }]);
    expect(await admin.remove(q, done)).toBe(true);
    expect([await f.raw.exists(k.job(done)), await f.raw.hexists(k.data, done), await f.raw.zscore(k.done, done)]).toEqual([0, 0, null]);
    expect(await admin.remove(q, pending)).toBe(true);
    expect(await f.queues.counts(q)).toMatchObject({ pending: 1, done: 0 });
    expect(await f.queues.getJob(q, pending)).toBeNull();
    const { jobs } = await wire.claim(f.conn.scriptClient, k, 10, 30_000);
    expect(jobs.map((j) => j.id)).toEqual([running]); // the ghost was dropped
    expect([await f.raw.hexists(k.data, pending), await f.raw.hget(k.meta, 'ghosts')]).toEqual([0, '0']);
    expect(await admin.remove(q, running)).toBe(false);
    expect((await admin.job(q, running)).status).toBe('active');
  });

  it('purges finished jobs older than a bound, bounded per call', async () => {
    const q = randomQueue('purge');
    const k = queueKeys(q);
    const ids = await finished(q, 3, 'done');
    expect(await admin.purge(q, { status: 'done', olderThanMs: 3_600_000 })).toEqual({ count: 0, more: false });
    expect(await admin.purge(q, { status: 'done', olderThanMs: 0, limit: 2 })).toEqual({ count: 2, more: true });
    expect(await admin.purge(q, { status: 'done', olderThanMs: 0 })).toEqual({ count: 1, more: false });
    for (const id of ids) expect([await f.raw.exists(k.job(id)), await f.raw.hexists(k.data, id)]).toEqual([0, 0]);
    expect(await f.raw.zcard(k.done)).toBe(0);
  });
});
