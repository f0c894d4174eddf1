/**
 * The claim pipelined behind an idle consumer's wait (WakeWaiter): a wake-up claims without a
 * round trip of its own, and stopping a consumer never leaves a job claimed by nobody: the wait is
 * unblocked, its claim answered, and whatever it got handed back with its attempt given back.
 */
import { queueKeys } from '../../src/core/keys.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('the claim behind the wait', () => {
  const f = queueFixture();

  it('an idle consumer runs a new job, and its wait claims scheduled work when its block ends', async () => {
    const q = randomQueue('wk');
    const ran: string[] = [];
    const { consumer, log } = await startConsumer(f.conn, q, (job) => void ran.push(job.id), { maxIdleMs: 200 });
    f.consumers.push(consumer);
    await sleep(50);
    const a = await f.queues.enqueue(q, { n: 1 });
    await eventually(() => ran.length === 1, 5000, 'the woken consumer to run the job');
    // A delayed job pushes no wake marker: the claim behind a timed-out wait promotes and claims it.
    const b = await f.queues.enqueue(q, { n: 2 }, { delay: 300 });
    await eventually(() => ran.length === 2, 5000, 'the delayed job to run');
    expect(ran).toEqual([a, b]);
    expect(log.warnings).toEqual([]);
  });

  it('stop unblocks an idle wait at once instead of waiting out its block', async () => {
    const q = randomQueue('wk');
    const { consumer } = await startConsumer(f.conn, q, () => undefined, { maxIdleMs: 5000 });
    await sleep(100);
    const t0 = Date.now();
    await consumer.stop(1000);
    expect(Date.now() - t0).toBeLessThan(900);
  });

  it('a job enqueued as its consumer stops ends done or pending with its attempt given back, never active', async () => {
    const outcomes = { done: 0, pending: 0 };
    for (let i = 0; i < 25; i++) {
      const q = randomQueue('wk');
      const { consumer } = await startConsumer(f.conn, q, () => 'ok', { maxIdleMs: 5000 });
      await sleep(20);
      // Even iterations stop as the enqueue is sent, odd ones the moment its reply is in: then
      // the wait has been woken and its claim has run, but its reply may not have been read.
      const id = i % 2 === 0 ? (await Promise.all([f.queues.enqueue(q, { i }), consumer.stop(2000)]))[0] : await f.queues.enqueue(q, { i });
      if (i % 2 === 1) await consumer.stop(2000);
      const job = await f.queues.getJob(q, id);
      expect(['done', 'pending']).toContain(job?.status);
      expect((await f.queues.counts(q)).active).toBe(0);
      if (job?.status === 'pending') {
        outcomes.pending++;
        expect(Number((await f.raw.hget(queueKeys(q).job(id), 'attempts')) ?? 0)).toBe(0);
      } else outcomes.done++;
    }
    expect(outcomes.done + outcomes.pending).toBe(25);
  });
});
