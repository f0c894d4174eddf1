/**
 * Cooperative cancel (issue 11): `cancel(queue, id)` of an active job reaches its running
 * handler through `job.signal` within one lease-extension interval, and the job ends
 * `cancelled` (never retried, never reaped back to pending) however the handler stops:
 * it resolves, throws, hangs past its lease, or its process is killed.
 */
import { queueKeys } from '../../src/core/keys.js';
import { JobCancelledError } from '../../src/queue/job-signals.js';
import type { Job } from '../../src/queue/job.js';
import { spawnFixture } from '../helpers/child.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

const LEASE = 600; // extension every 200 ms

describe('cooperative cancel of an active job', () => {
  const f = queueFixture();

  /** Starts a consumer with `handler`, enqueues one job, waits for it to run, cancels it. */
  async function cancelWhileRunning(handler: (job: Job<unknown>, started: () => void) => Promise<unknown>) {
    const q = randomQueue('coop');
    let aborted: { at: number; reason: unknown } | undefined;
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const { consumer, log } = await startConsumer(f.conn, q, (job) => {
      job.signal.addEventListener('abort', () => (aborted = { at: Date.now(), reason: job.signal.reason as unknown }));
      return handler(job, started);
    }, { leaseMs: LEASE, attempts: 5 });
    f.consumers.push(consumer);
    const id = await f.queues.enqueue(q, { p: 1 });
    await running;
    const asked = Date.now();
    expect(await f.queues.cancel(q, id)).toBe('flagged');
    await eventually(() => aborted !== undefined, 3000, 'the handler saw its signal abort');
    // Within one extension interval (lease/3 = 200 ms), with room for a busy machine.
    expect(aborted!.at - asked).toBeLessThan(LEASE / 3 + 800);
    expect(aborted!.reason).toBeInstanceOf(JobCancelledError);
    return { q, id, log };
  }

  async function expectCancelled(q: string, id: string, othersActive = 0) {
    await eventually(async () => (await f.queues.getJob(q, id))?.status === 'cancelled', 5000, 'the job ended cancelled');
    const job = await f.queues.getJob(q, id);
    expect(job).toMatchObject({ status: 'cancelled', cancelRequested: true, attempts: 1 });
    const k = queueKeys(q);
    expect(await f.raw.zscore(k.cancelled, id)).not.toBeNull();
    expect(await f.raw.lrange(k.pending, 0, -1)).toEqual([]);
    expect(await f.raw.zscore(k.scheduled, id)).toBeNull();
    expect(await f.queues.counts(q)).toMatchObject({ pending: 0, active: othersActive, scheduled: 0, done: 0, dead: 0, cancelled: 1 });
  }

  it('a handler that resolves after the abort: the job ends cancelled, not done', async () => {
    const { q, id } = await cancelWhileRunning(
      (job, started) =>
        new Promise((resolve) => {
          started();
          job.signal.addEventListener('abort', () => resolve('finished anyway'));
        }),
    );
    await expectCancelled(q, id);
    expect((await f.queues.getJob(q, id))?.result).toBeUndefined();
  });

  it('a handler that throws on the abort: the job ends cancelled, not retried', async () => {
    const { q, id } = await cancelWhileRunning(
      (job, started) =>
        new Promise((_, reject) => {
          started();
          job.signal.addEventListener('abort', () => reject(new Error('stopped on cancel')));
        }),
    );
    await expectCancelled(q, id);
    expect((await f.queues.getJob(q, id))?.error).toBe('Error: stopped on cancel');
  });

  it('a handler that ignores the abort and hangs: its lease is no longer extended, the reaper ends it cancelled', async () => {
    const { q, id } = await cancelWhileRunning((_job, started) => {
      started();
      return new Promise(() => undefined);
    });
    await expectCancelled(q, id);
  });

  it('a handler whose process is killed: the reaper of another process ends the job cancelled', async () => {
    const q = randomQueue('coopkill');
    const child = spawnFixture('consumer-child', [testUrl(), q, String(LEASE), 'hang']);
    await child.waitForLine(/^READY$/, 10_000);
    const id = await f.queues.enqueue(q, { p: 1 });
    await child.waitForLine(/^STARTED /, 10_000);
    expect(await f.queues.cancel(q, id)).toBe('flagged');
    child.signal('SIGKILL');
    await child.exited;
    // A live consumer of the queue reaps the expired lease.
    const { consumer } = await startConsumer(f.conn, q, () => 'never runs', { leaseMs: LEASE });
    f.consumers.push(consumer);
    await expectCancelled(q, id);
  });

  it('a prefetched job not yet started is ended cancelled at the next extension, without running', async () => {
    const q = randomQueue('coopbuf');
    const ran: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { consumer } = await startConsumer(f.conn, q, async (job) => {
      ran.push(job.id);
      await gate;
      return 'ok';
    }, { leaseMs: LEASE, concurrency: 1, prefetch: 1 });
    f.consumers.push(consumer);
    const [first, second] = await f.queues.enqueueMany(q, [{ payload: 1 }, { payload: 2 }]);
    await eventually(async () => ran.length === 1 && (await f.queues.getJob(q, second))?.status === 'active', 3000, 'second prefetched');
    expect(await f.queues.cancel(q, second)).toBe('flagged');
    await expectCancelled(q, second, 1); // the first still runs
    release();
    await eventually(async () => (await f.queues.getJob(q, first))?.status === 'done', 3000, 'first done');
    expect(ran).toEqual([first]);
  });

  it('a job that completes before its holder learnt of the cancel is done (the work was done)', async () => {
    const q = randomQueue('coopdone');
    const { consumer } = await startConsumer(f.conn, q, async () => {
      await new Promise((r) => setTimeout(r, 50));
      return 'r';
    }, { leaseMs: 30_000 });
    f.consumers.push(consumer);
    const id = await f.queues.enqueue(q, { p: 1 });
    await eventually(async () => (await f.queues.getJob(q, id))?.status === 'active', 3000, 'active');
    expect(await f.queues.cancel(q, id)).toBe('flagged');
    await eventually(async () => (await f.queues.getJob(q, id))?.status === 'done', 3000, 'done');
    expect(await f.queues.getJob(q, id)).toMatchObject({ status: 'done', result: 'r', cancelRequested: true });
  });
});
