/**
 * Job priorities through QueueService and a real Consumer (docs/queue.md "Priorities"):
 * higher first, FIFO within a priority, retries keep their level, counts see every level, the
 * claim cost does not grow with the backlog, and bad priorities are refused writing nothing.
 */
import { queueKeys, wire } from '../../src/protocol.js';
import { refusedUnchanged } from '../helpers/refusals.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const f = queueFixture();

describe('priorities', () => {
  it('a keyed enqueue with a priority is deduplicated and lands in its level (both trailing arguments in one call)', async () => {
    const q = randomQueue('prio');
    const k = queueKeys(q);
    const [a, b] = await Promise.all([f.queues.enqueue(q, { n: 1 }, { key: 'order-7', priority: 5 }), f.queues.enqueue(q, { n: 2 }, { key: 'order-7', priority: 5 })]);
    expect(b).toBe(a);
    const other = await f.queues.enqueue(q, { n: 3 }, { key: 'order-8', lane: 'acme' });
    expect(await f.raw.lrange(k.pendingAt(5), 0, -1)).toEqual([a]);
    expect(await f.raw.lrange(k.lane('acme'), 0, -1)).toEqual([other]);
    expect(await f.raw.get(`emq:{${q}}:key:order-7`)).toBe(a);
    expect((await f.queues.counts(q)).pending).toBe(2);
  });

  it('a consumer runs higher priorities first, FIFO within one priority', async () => {
    const q = randomQueue('prio');
    const plan: [string, number | undefined][] = [['a', undefined], ['b', 3], ['c', 9], ['d', 3], ['e', 0], ['f', 9]];
    for (const [name, priority] of plan) await f.queues.enqueue(q, { name }, priority === undefined ? {} : { priority });
    expect((await f.queues.counts(q)).pending).toBe(6);
    const seen: string[] = [];
    const { consumer } = await startConsumer(f.conn, q, (job) => {
      seen.push((job.payload as { name: string }).name);
    });
    try {
      await eventually(() => seen.length === 6, 10_000, 'the consumer to run them');
    } finally {
      await consumer.stop(2000);
    }
    expect(seen).toEqual(['c', 'f', 'b', 'd', 'a', 'e']);
    expect(await f.raw.exists(queueKeys(q).levels)).toBe(0);
  });

  it('a retried prioritised job comes back at its level, ahead of plain jobs enqueued before it', async () => {
    const q = randomQueue('prio');
    await f.queues.enqueue(q, { name: 'p' }, { priority: 5 });
    const seen: string[] = [];
    let failed = false;
    const { consumer } = await startConsumer(f.conn, q, async (job) => {
      const name = (job.payload as { name: string }).name;
      seen.push(name);
      if (name === 'p' && !failed) {
        failed = true;
        // plain jobs arrive while p waits for its retry (backoff f:50)
        await f.queues.enqueueMany(q, [{ payload: { name: 'x' } }, { payload: { name: 'y' } }]);
        throw new Error('once');
      }
      if (name === 'x') await new Promise((r) => setTimeout(r, 150)); // p is due again meanwhile
    }, { prefetch: 0 });
    try {
      await eventually(() => seen.length === 4, 10_000, 'the consumer to run them');
    } finally {
      await consumer.stop(2000);
    }
    expect(seen).toEqual(['p', 'x', 'p', 'y']);
  });

  it('with 20,000 pending over nine levels, one claim takes the oldest job of the highest level (at most ten lists read)', async () => {
    const q = randomQueue('prio');
    const k = queueKeys(q);
    const batch = (p: number, n: number) => Array.from({ length: n }, (_, i) => ({ payload: i, opts: { priority: p } }));
    for (let i = 0; i < 20; i++) await f.queues.enqueueMany(q, batch(1 + (i % 9), 1000));
    await f.queues.enqueue(q, 'urgent', { priority: 9 });
    // The claim takes the oldest priority-9 job: FIFO within the level, whatever sits below it.
    const r = await wire.claim(f.conn.scriptClient, k, 1, 30_000);
    expect(r.waitMs).toBe(-1);
    expect(JSON.parse(r.jobs[0].payload)).toBe(0);
    expect(await f.raw.zcard(k.levels)).toBe(9);
    expect((await f.queues.counts(q)).pending).toBe(20_000);
  });

  it.each([[-1], [10], [1.5], [Number.NaN], ['3']])('priority %p is refused with EMQ_BAD_OPTION, nothing written', async (priority) => {
    const q = randomQueue('prio');
    await f.queues.enqueue(q, 'seed');
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () => f.queues.enqueue(q, 'x', { priority: priority as number }));
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () => f.queues.enqueueMany(q, [{ payload: 'ok', opts: { priority: 2 } }, { payload: 'x', opts: { priority: priority as number } }]));
  });
});
