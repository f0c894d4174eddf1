/**
 * Issue 37 item 6: a running job whose lease is lost sees a typed reason on `job.signal` —
 * `LeaseLostError` (EMQ_STALE_TOKEN) after a stall let the reaper take it, `JobCancelledError`
 * when it was cancelled while its holder was stalled — never a plain Error.
 */
import { queueKeys } from '../../src/core/keys.js';
import { wire } from '../../src/core/wire/queue.js';
import { LeaseLostError, StaleTokenError } from '../../src/core/errors.js';
import { spawnFixture, type ChildHandle } from '../helpers/child.js';
import { startConsumer } from '../helpers/consumers.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';
import { queueFixture } from '../helpers/queue-fixture.js';

const LEASE_MS = 1000;

describe('the abort reason of a lost lease', () => {
  const f = queueFixture();

  /** A child consumer that takes `id` and is then frozen (SIGSTOP) past its lease. */
  async function stalledHolder(q: string, id: string): Promise<ChildHandle> {
    const child = spawnFixture('consumer-child', [testUrl(), q, String(LEASE_MS), 'stall']);
    const [, started] = await child.waitForLine(/^STARTED (\S+) (\d+) 1$/);
    expect(started).toBe(id);
    child.signal('SIGSTOP');
    await new Promise((r) => setTimeout(r, LEASE_MS + 200)); // its lease runs out while it sleeps
    return child;
  }

  it('the reaper took the job during a stall: the resumed holder aborts with LeaseLostError', async () => {
    const q = randomQueue('lost');
    const k = queueKeys(q);
    const id = await f.queues.enqueue(q, { n: 1 });
    const child = await stalledHolder(q, id);
    const r = await wire.reap(f.conn.scriptClient, k, 100, 3, 1000);
    expect(r.jobs).toEqual([{ id, attempt: 1, outcome: 'requeued' }]);
    child.signal('SIGCONT');
    const [, , attempt, name, code] = await child.waitForLine(/^ABORTED (\S+) (\d+) (\S+) (\S+)$/);
    expect({ attempt, name, code }).toEqual({ attempt: '1', name: 'LeaseLostError', code: 'EMQ_STALE_TOKEN' });
  });

  it('the job was cancelled while its holder was stalled: the resumed holder aborts with JobCancelledError', async () => {
    const q = randomQueue('lostcancel');
    const k = queueKeys(q);
    const id = await f.queues.enqueue(q, { n: 1 });
    const child = await stalledHolder(q, id);
    expect(await f.queues.cancel(q, id)).toBe('flagged'); // active: flagged, the holder should stop
    const r = await wire.reap(f.conn.scriptClient, k, 100, 3, 1000);
    expect(r.jobs).toEqual([{ id, attempt: 1, outcome: 'cancelled' }]);
    child.signal('SIGCONT');
    const [, , attempt, name, code] = await child.waitForLine(/^ABORTED (\S+) (\d+) (\S+) (\S+)$/);
    expect({ attempt, name, code }).toEqual({ attempt: '1', name: 'JobCancelledError', code: '-' });
    await eventually(async () => (await f.queues.getJob(q, id))?.status === 'cancelled', 5000, 'the job to stay cancelled');
  });

  it('a write the token refuses aborts the signal with LeaseLostError at once, not at the next extension', async () => {
    const q = randomQueue('lostwrite');
    const k = queueKeys(q);
    const id = await f.queues.enqueue(q, { n: 1 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    const seen: { write?: unknown; reason?: unknown; at?: number } = {};
    // A 30 s lease: the holder's next extension is up to 5 s away, so an abort within a second
    // can only come from the refused write.
    const { consumer } = await startConsumer(f.conn, q, async (job) => {
      if (job.attempt > 1) return 'again';
      started();
      await gate;
      seen.write = await job.progress(50).then(() => 'written', (e: unknown) => e);
      seen.reason = job.signal.reason;
      seen.at = Date.now();
      return 'late'; // ignored: the lease is gone
    });
    f.consumers.push(consumer);
    await running;
    // Expire the lease and reap it (again, should the holder's extension have raced the expiry).
    await eventually(async () => {
      await f.raw.zadd(k.active, 'XX', 0, id);
      return (await wire.reap(f.conn.scriptClient, k, 100, 3, 1000)).jobs.some((j) => j.id === id);
    }, 5000, 'the reap to take the job');
    const t0 = Date.now();
    release();
    await eventually(async () => seen.at !== undefined, 2000, 'the handler to see the refusal');
    expect(seen.write).toBeInstanceOf(StaleTokenError);
    expect(seen.write).not.toBeInstanceOf(LeaseLostError);
    expect(seen.reason).toBeInstanceOf(LeaseLostError);
    expect(seen.at! - t0).toBeLessThan(1000);
    // The job runs again (attempt 2) and completes; the stale attempt's 'late' never lands.
    await eventually(async () => (await f.queues.getJob(q, id))?.status === 'done', 10_000, 'the retry to complete');
    expect(await f.queues.getJob(q, id)).toMatchObject({ result: 'again', attempts: 2 });
  });

  it('LeaseLostError is a StaleTokenError naming the job and queue', () => {
    const e = new LeaseLostError('job0123456789a', 'orders');
    expect(e).toBeInstanceOf(StaleTokenError);
    expect(e).toMatchObject({ name: 'LeaseLostError', code: 'EMQ_STALE_TOKEN', jobId: 'job0123456789a', queue: 'orders' });
    expect(e.message).toContain('job job0123456789a of "orders" lost its lease');
  });
});
