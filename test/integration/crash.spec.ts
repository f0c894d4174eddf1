import { queueKeys } from '../../src/core/keys.js';
import { spawnFixture } from '../helpers/child.js';
import { startConsumer } from '../helpers/consumers.js';
import { eventually, queueKeysIn, randomQueue, testUrl } from '../helpers/valkey.js';
import { queueFixture } from '../helpers/queue-fixture.js';

interface Call {
  readonly id: string;
  readonly attempt: number;
  readonly token: string;
}

describe('a consumer process killed with SIGKILL mid-job', () => {
  const f = queueFixture();

  /** Starts a `hang` child on `queue`, waits until its handler started, then SIGKILLs it. */
  async function crashChildOn(queue: string, id: string): Promise<string> {
    const child = spawnFixture('consumer-child', [testUrl(), queue, '1000', 'hang']);
    const [, startedId, token, attempt] = await child.waitForLine(/^STARTED (\S+) (\d+) (\d+)$/);
    expect(startedId).toBe(id);
    expect(attempt).toBe('1');
    const row = await f.raw.hgetall(queueKeys(queue).job(id));
    expect(row).toMatchObject({ status: 'active', attempts: '1', token });
    child.signal('SIGKILL');
    expect(await child.exited).toEqual({ code: null, signal: 'SIGKILL' });
    return token;
  }

  it('re-delivers the job after the lease expires; the next consumer completes it exactly once', async () => {
    const q = randomQueue('crash');
    const k = queueKeys(q);
    const id = await f.queues.enqueue(q, { n: 7 });
    const firstToken = await crashChildOn(q, id);

    const calls: Call[] = [];
    const { consumer, log } = await startConsumer(
      f.conn,
      q,
      (job) => {
        calls.push({ id: job.id, attempt: job.attempt, token: job.token });
        return { by: 'second', n: (job.payload as { n: number }).n };
      },
      { leaseMs: 1000 },
    );
    f.consumers.push(consumer);

    await eventually(async () => (await f.queues.getJob(q, id))?.status === 'done', 20_000, 'the re-delivered job to complete');

    // A sentinel enqueued afterwards is processed too: the loop went round again, and the
    // crashed job was still not run a second time.
    const sentinel = await f.queues.enqueue(q, { n: 0 });
    await eventually(async () => (await f.queues.getJob(q, sentinel))?.status === 'done', 20_000, 'the sentinel');

    const mine = calls.filter((c) => c.id === id);
    expect(mine).toHaveLength(1);
    expect(mine[0].attempt).toBe(2);
    expect(BigInt(mine[0].token)).toBeGreaterThan(BigInt(firstToken));
    expect(calls.map((c) => c.id)).toEqual([id, sentinel]);

    const job = await f.queues.getJob(q, id);
    expect(job).toMatchObject({ status: 'done', attempts: 2, result: { by: 'second', n: 7 }, payload: { n: 7 } });
    // It came back through the lease-expiry path (reap), not through a retry.
    expect(job?.error).toBe('lease expired');
    expect(await f.raw.hget(k.job(id), 'token')).toBe(mine[0].token);

    expect(await f.queues.counts(q)).toEqual({ scheduled: 0, pending: 0, active: 0, done: 2, dead: 0, cancelled: 0, waiting: 0 });
    expect(await f.raw.zrange(k.done, 0, -1)).toEqual([id, sentinel]);
    // `active` stays, holding only its anchor (docs/protocol.md §2): the counts above say 0 active.
    // `parked` holds the live second consumer's registration (§5, "Parked consumers").
    const allowed = new Set([k.meta, k.done, k.wake, k.data, k.active, k.parked, k.job(id), k.job(sentinel)]);
    const keys = await queueKeysIn(f.raw, q);
    // The consumers' stored metrics (`stats:m:…`, `stats:h:…`, docs/admin.md "Metrics") may be flushed by now.
    expect(keys.filter((key) => !allowed.has(key) && !key.includes(':stats:'))).toEqual([]);
    // The reap is logged once (docs/telemetry.md); nothing else.
    // The crashed child may have parked again before it died: then the sentinel was leased to its
    // registration (docs/queue.md, "Idle") and came back through a reap too, never lost.
    const reaped = (j: string): string => `job ${j} of "${q}" lost its lease on attempt 1 (error: lease expired); requeued (pending again)`;
    expect([[reaped(id)], [reaped(id), reaped(sentinel)]]).toContainEqual(log.warnings);
    expect(log.errors).toEqual([]);
  });

  it('a killed last attempt goes to the morgue on lease expiry, without running again', async () => {
    const q = randomQueue('crash-last');
    const k = queueKeys(q);
    const id = await f.queues.enqueue(q, { n: 1 }, { attempts: 1 });
    await crashChildOn(q, id);

    const calls: Call[] = [];
    const { consumer, log } = await startConsumer(
      f.conn,
      q,
      (job) => {
        calls.push({ id: job.id, attempt: job.attempt, token: job.token });
      },
      { leaseMs: 1000 },
    );
    f.consumers.push(consumer);

    await eventually(async () => (await f.queues.getJob(q, id))?.status === 'dead', 20_000, 'the job to be buried');
    const sentinel = await f.queues.enqueue(q, { n: 0 });
    await eventually(async () => (await f.queues.getJob(q, sentinel))?.status === 'done', 20_000, 'the sentinel');

    expect(calls.map((c) => c.id)).toEqual([sentinel]);
    const job = await f.queues.getJob(q, id);
    expect(job).toMatchObject({ status: 'dead', attempts: 1, error: 'lease expired after attempt 1' });
    expect(await f.raw.zrange(k.dead, 0, -1)).toEqual([id]);
    expect(await f.queues.counts(q)).toEqual({ scheduled: 0, pending: 0, active: 0, done: 1, dead: 1, cancelled: 0, waiting: 0 });
    expect(log.warnings).toEqual([]);
    // The burial is logged once, as an error, with queue, id, attempt and error.
    expect(log.errors).toEqual([`job ${id} of "${q}" lost its lease on attempt 1 (error: lease expired); buried (dead: it was the last attempt)`]);
  });
});
