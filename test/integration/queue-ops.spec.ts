import { queueKeys } from '../../src/core/keys.js';
import { wire } from '../../src/core/wire/queue.js';
import { startConsumer } from '../helpers/consumers.js';
import { eventually, randomQueue } from '../helpers/valkey.js';
import { queueFixture } from '../helpers/queue-fixture.js';

describe('idempotent enqueue, cancel, prefetch and release', () => {
  const f = queueFixture();

  it('an enqueue with a minted id adds the job once, however often it is retried', async () => {
    const q = randomQueue('idem');
    const id = f.queues.mintId();
    const ids = await Promise.all([1, 2, 3].map((n) => f.queues.enqueue(q, { n }, { id })));
    expect(ids).toEqual([id, id, id]);
    expect((await f.queues.counts(q)).pending).toBe(1);
    expect((await f.queues.getJob(q, id))?.payload).toEqual({ n: 1 });
  });

  it('cancel: pending and scheduled jobs are cancelled, an unknown id is missing', async () => {
    const q = randomQueue('cancel');
    const now = await f.queues.enqueue(q, { a: 1 });
    const later = await f.queues.enqueue(q, { a: 2 }, { runAt: new Date(Date.now() + 60_000), attempts: 2 });
    expect((await f.queues.getJob(q, later))).toMatchObject({ status: 'scheduled', maxAttempts: 2, attempts: 0 });
    expect(await f.queues.cancel(q, now)).toBe('cancelled');
    expect(await f.queues.cancel(q, later)).toBe('cancelled');
    expect(await f.queues.cancel(q, now)).toBe('finished');
    expect(await f.queues.cancel(q, f.queues.mintId())).toBe('missing');
    expect(await f.queues.counts(q)).toMatchObject({ pending: 0, scheduled: 0, cancelled: 2 });
    expect((await f.queues.getJob(q, now))?.status).toBe('cancelled');
    // A cancelled job is never claimed.
    const ran: string[] = [];
    f.consumers.push((await startConsumer(f.conn, q, (job) => void ran.push(job.id))).consumer);
    await new Promise((r) => setTimeout(r, 200));
    expect(ran).toEqual([]);
  });

  it('prefetch holds claimed jobs leased, and stop hands the unstarted ones back with their attempt', async () => {
    const q = randomQueue('prefetch');
    const ids = await f.queues.enqueueMany(q, [1, 2, 3, 4].map((n) => ({ payload: { n } })));
    let release: () => void = () => undefined;
    const started: string[] = [];
    const { consumer } = await startConsumer(
      f.conn,
      q,
      async (job) => {
        started.push(job.id);
        await new Promise<void>((r) => (release = r));
      },
      { concurrency: 1, prefetch: 2 },
    );
    await eventually(() => started.length === 1, 3000, 'first start');
    // One running and two prefetched: three jobs active, one still pending.
    expect(await f.queues.counts(q)).toMatchObject({ active: 3, pending: 1 });
    expect(started).toEqual([ids[0]]);
    const stopping = consumer.stop(5000);
    await new Promise((r) => setTimeout(r, 100));
    release();
    await stopping;
    expect(await f.queues.counts(q)).toMatchObject({ active: 0, pending: 3, done: 1 });
    for (const id of ids.slice(1, 3)) expect(await f.queues.getJob(q, id)).toMatchObject({ status: 'pending', attempts: 0 });
    // The handed-back jobs are first in line again, in their order.
    const order: string[] = [];
    f.consumers.push((await startConsumer(f.conn, q, (job) => void order.push(job.id), { prefetch: 0 })).consumer);
    await eventually(() => order.length === 3, 3000, 'the rest');
    expect(order).toEqual(ids.slice(1));
  });

  it('release is fenced: a stale token hands nothing back', async () => {
    const q = randomQueue('release');
    const k = queueKeys(q);
    const id = await f.queues.enqueue(q, { r: 1 });
    const first = await wire.claim(f.conn.scriptClient, k, 1, 50);
    await new Promise((r) => setTimeout(r, 80));
    expect(await wire.reap(f.conn.scriptClient, k, 10, 3, 100)).toMatchObject({ requeued: 1, buried: 0, cancelled: 0, jobs: [{ outcome: 'requeued', attempt: 1 }] });
    const second = await wire.claim(f.conn.scriptClient, k, 1, 30_000);
    expect(await wire.release(f.conn.scriptClient, k, [{ id, token: first.jobs[0].token }])).toEqual([0]);
    expect(await f.queues.getJob(q, id)).toMatchObject({ status: 'active', attempts: 2 });
    expect(await wire.release(f.conn.scriptClient, k, [{ id, token: second.jobs[0].token }])).toEqual([1]);
    expect(await f.queues.getJob(q, id)).toMatchObject({ status: 'pending', attempts: 1 });
    expect(await f.raw.zcount(k.active, '-inf', '(+inf')).toBe(0);
  });
});
