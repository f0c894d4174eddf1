/**
 * Part A of the queue wire, behaviour at its edges: promotion of any legal number of due jobs,
 * the claim's wait reply, done-retention trimming, duplicate ids in a batch, wake markers.
 */
import type { Redis } from 'iovalkey';
import { QueueService } from '../../src/index.js';
import { queueKeys, wire } from '../../src/protocol.js';
import type { EchoMqConnection, QueueKeys } from '../../src/protocol.js';
import { jobId, wireJob } from '../helpers/refusals.js';
import { openConnection, randomQueue, rawClient } from '../helpers/valkey.js';

let raw: Redis, conn: EchoMqConnection, queues: QueueService;
beforeAll(async () => {
  raw = rawClient();
  conn = await openConnection();
  queues = new QueueService(conn);
});
afterAll(async () => Promise.all([conn.close(), raw.quit()]));

const fresh = (): { q: string; k: QueueKeys } => {
  const q = randomQueue('wq');
  return { q, k: queueKeys(q) };
};

/** Writes `n` due scheduled jobs the way enqueue leaves them (data field + scheduled entry), in pipelines. */
async function dueJobs(k: QueueKeys, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => queues.mintId());
  for (let i = 0; i < n; i += 1000) {
    const p = raw.pipeline();
    for (const id of ids.slice(i, i + 1000)) p.hset(k.data, id, '{}').zadd(k.scheduled, 1000 + i, id);
    await p.exec();
  }
  await raw.hset(k.meta, 'v', '1');
  return ids;
}

describe('claim promotes any legal number of due jobs', () => {
  it('10,000 due jobs with promote limit 10000: all promoted in order, then claimed', async () => {
    const { k } = fresh();
    const ids = await dueJobs(k, 10_000);
    const r = await wire.claim(conn.scriptClient, k, 0, 1000, 10_000);
    expect(r).toEqual({ jobs: [], waitMs: -1 });
    expect([await raw.zcard(k.scheduled), await raw.llen(k.pending)]).toEqual([0, 10_000]);
    // FIFO: the earliest due job is claimed first.
    const claimed = await wire.claim(conn.scriptClient, k, 1000, 1000, 10_000);
    expect(claimed.jobs.map((j) => j.id)).toEqual(ids.slice(0, 1000));
  });

  it('10,000 due jobs claimed in the same call as their promotion', async () => {
    const { k } = fresh();
    const ids = await dueJobs(k, 10_000);
    const r = await wire.claim(conn.scriptClient, k, 1000, 1000, 10_000);
    expect(r.jobs.map((j) => j.id)).toEqual(ids.slice(0, 1000));
    expect(r.jobs.map((j) => Number(j.token))).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    expect([await raw.llen(k.pending), await raw.zcount(k.active, '-inf', '(+inf'), r.waitMs]).toEqual([9000, 1000, -1]);
  });
});

describe("active's anchor", () => {
  it('keeps active in skiplist encoding from the first claim, is never reaped and never counted', async () => {
    const { q, k } = fresh();
    await queues.enqueueMany(q, [{ payload: 1 }, { payload: 2 }]);
    const r = await wire.claim(conn.scriptClient, k, 2, 1, 0); // a 1 ms lease: expired at once
    expect(r.jobs).toHaveLength(2);
    expect(await raw.object('ENCODING', k.active)).toBe('skiplist');
    await new Promise((res) => setTimeout(res, 5));
    const reaped = await wire.reap(conn.scriptClient, k, 100, 3, 100);
    expect(reaped.requeued).toBe(2);
    // Only the anchor is left: the key stays (and keeps its encoding), the count says 0.
    expect(await raw.zrange(k.active, 0, -1, 'WITHSCORES')).toEqual([expect.stringMatching(/^~ EchoMQ anchor/), 'inf']);
    expect(await raw.object('ENCODING', k.active)).toBe('skiplist');
    expect((await queues.counts(q)).active).toBe(0);
    expect((await queues.counts(q)).pending).toBe(2);
  });
});

describe("claim's wait reply", () => {
  it('stays a non-negative safe integer even when a peer scheduled a job at a huge instant', async () => {
    const { k } = fresh();
    await raw.hset(k.meta, 'v', '1');
    await raw.zadd(k.scheduled, '1e300', jobId(77n));
    const r = await wire.claim(conn.scriptClient, k, 1, 1000, 0);
    expect(r.waitMs).toBeGreaterThanOrEqual(0);
    expect(r.waitMs).toBeLessThanOrEqual(Number.MAX_SAFE_INTEGER);
  });

  it('is -2 with nothing scheduled, the ms until the next job otherwise', async () => {
    const { k } = fresh();
    expect((await wire.claim(conn.scriptClient, k, 1, 1000)).waitMs).toBe(-2);
    await wire.enqueue(conn.scriptClient, k, 1024, [wireJob(queues.mintId(), '{}', { delayMs: 60_000 })]);
    const w = (await wire.claim(conn.scriptClient, k, 1, 1000)).waitMs;
    expect(w).toBeGreaterThan(59_000);
    expect(w).toBeLessThanOrEqual(60_000);
  });
});

/** Enqueues and claims `n` jobs; resolves to their holds. */
async function active(k: QueueKeys, n: number): Promise<{ id: string; token: string; result: string }[]> {
  const ids = Array.from({ length: n }, () => queues.mintId());
  await wire.enqueue(conn.scriptClient, k, 1024, ids.map((id) => wireJob(id)));
  const r = await wire.claim(conn.scriptClient, k, n, 60_000);
  return r.jobs.map((j) => ({ id: j.id, token: j.token, result: '1' }));
}

describe('complete and the done retention', () => {
  it.each([10, 0])('the same id twice in one batch completes once: 1 0 (keepDone %d)', async (keep) => {
    const { k } = fresh();
    const [a] = await active(k, 1);
    expect(await wire.complete(conn.scriptClient, k, keep, [a, a])).toEqual([1, 0]);
    expect(await raw.zcard(k.done)).toBe(keep > 0 ? 1 : 0);
  });

  it('lowering keepDone to 0 trims the older done rows (rows and data gone), at most 100 beyond the batch per call', async () => {
    const { k } = fresh();
    const old = await active(k, 250);
    expect(await wire.complete(conn.scriptClient, k, 1000, old)).toEqual(old.map(() => 1));
    const [x] = await active(k, 1);
    expect(await wire.complete(conn.scriptClient, k, 0, [x])).toEqual([1]);
    expect(await raw.zcard(k.done)).toBe(150);
    // The oldest went first, with their rows and data.
    expect(await raw.exists(k.job(old[0].id), k.job(old[99].id), k.job(x.id))).toBe(0);
    expect(await raw.hexists(k.data, old[99].id)).toBe(0);
    expect(await raw.exists(k.job(old[100].id))).toBe(1);
    for (let i = 0; i < 2; i++) await wire.complete(conn.scriptClient, k, 0, await active(k, 1));
    expect(await raw.zcard(k.done)).toBe(0);
    expect(await raw.hlen(k.data)).toBe(0);
  });

  it('lowering keepDone from 1000 to 10 converges to 10 rows, each call removing at most its batch + 100 + slack', async () => {
    const { k } = fresh();
    await wire.complete(conn.scriptClient, k, 1000, await active(k, 300));
    await wire.complete(conn.scriptClient, k, 10, await active(k, 5));
    expect(await raw.zcard(k.done)).toBe(199); // 305 - (5 + 100 + 1): slack is floor(10 / 10)
    await wire.complete(conn.scriptClient, k, 10, await active(k, 5));
    await wire.complete(conn.scriptClient, k, 10, await active(k, 5));
    expect(await raw.zcard(k.done)).toBe(10);
  });

  it('the retention is trimmed in steps: up to keepDone / 10 rows beyond it, then back to keepDone, oldest first', async () => {
    const { k } = fresh();
    const first = await active(k, 100);
    await wire.complete(conn.scriptClient, k, 100, first);
    for (let i = 0; i < 10; i++) await wire.complete(conn.scriptClient, k, 100, await active(k, 1));
    expect(await raw.zcard(k.done)).toBe(110); // within the slack (10): no trim yet
    expect(await raw.exists(k.job(first[0].id))).toBe(1);
    const [last] = await active(k, 1);
    expect(await wire.complete(conn.scriptClient, k, 100, [last])).toEqual([1]);
    expect(await raw.zcard(k.done)).toBe(100); // 111 > 100 + 10: back to 100
    // The 11 oldest went, with their rows and data; the 12th and the newest stay.
    expect(await raw.exists(...first.slice(0, 11).map((j) => k.job(j.id)))).toBe(0);
    expect(await raw.hexists(k.data, first[10].id)).toBe(0);
    expect(await raw.exists(k.job(first[11].id), k.job(last.id))).toBe(2);
    expect(await raw.hexists(k.data, first[11].id)).toBe(1);
  });

  it('a call whose completions are all refused trims nothing', async () => {
    const { k } = fresh();
    await wire.complete(conn.scriptClient, k, 1000, await active(k, 20));
    const [a] = await active(k, 1);
    expect(await wire.complete(conn.scriptClient, k, 0, [{ ...a, token: '999999' }])).toEqual([0]);
    expect(await raw.zcard(k.done)).toBe(20);
  });
});

describe('wake markers', () => {
  it('an enqueue that added nothing pushes no marker', async () => {
    const { k } = fresh();
    const id = queues.mintId();
    expect(await wire.enqueue(conn.scriptClient, k, 1024, [wireJob(id)])).toEqual([1]);
    expect(await raw.llen(k.wake)).toBe(1);
    await raw.del(k.wake);
    expect(await wire.enqueue(conn.scriptClient, k, 1024, [wireJob(id), wireJob(id)])).toEqual([0, 0]);
    expect(await raw.llen(k.wake)).toBe(0);
  });

  it('the same id twice in one enqueue batch is added once: 1 0', async () => {
    const { k } = fresh();
    const id = queues.mintId();
    expect(await wire.enqueue(conn.scriptClient, k, 1024, [wireJob(id, '"first"'), wireJob(id, '"second"')])).toEqual([1, 0]);
    expect([await raw.lrange(k.pending, 0, -1), await raw.hget(k.data, id)]).toEqual([[id], '"first"']);
  });
});

describe('extend', () => {
  it('extends held leases in one call and refuses a stale token per job', async () => {
    const { k } = fresh();
    const [a, b] = await active(k, 2);
    const before = Number(await raw.zscore(k.active, a.id));
    expect(await wire.extend(conn.scriptClient, k, 3_600_000, [a, { ...b, token: '0' }, b])).toEqual([1, 0, 1]);
    expect(Number(await raw.zscore(k.active, a.id))).toBeGreaterThan(before + 3_000_000);
  });
});
