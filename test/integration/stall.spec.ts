import { queueKeys } from '../../src/core/keys.js';
import { wire } from '../../src/core/wire/queue.js';
import { spawnFixture, type ChildHandle } from '../helpers/child.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueState, type KeyState } from '../helpers/state.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';
import { queueFixture } from '../helpers/queue-fixture.js';

/** What the queue looked like once the job was completed by its second holder. */
interface Snapshot {
  readonly row: Record<string, string>;
  readonly state: Record<string, KeyState>;
}

describe('a stalled holder that wakes up after its lease expired', () => {
  const f = queueFixture();

  /**
   * The child holding `id` is stopped (SIGSTOP); a second, in-process consumer reclaims the job
   * after the lease expires and completes it with {by: 'X'}. Returns the queue as it then stands.
   */
  async function reclaimWhileStopped(q: string, id: string, child: ChildHandle): Promise<Snapshot> {
    child.signal('SIGSTOP');
    const calls: { id: string; attempt: number }[] = [];
    const { consumer, log } = await startConsumer(
      f.conn,
      q,
      (job) => {
        calls.push({ id: job.id, attempt: job.attempt });
        return { by: 'X' };
      },
      // Its own lease is longer than the stalled child's: on a loaded machine a 1 s lease could
      // lapse before its completion lands, and the job would be reaped a second time.
      { leaseMs: 3000 },
    );
    f.consumers.push(consumer);
    await eventually(async () => (await f.queues.getJob(q, id))?.status === 'done', 20_000, 'the reclaimed job to complete');
    expect(calls).toEqual([{ id, attempt: 2 }]);
    // The reap is logged once, with queue, id, attempt and error (docs/telemetry.md); nothing else.
    expect(log.warnings).toEqual([`job ${id} of "${q}" lost its lease on attempt 1 (error: lease expired); requeued (pending again)`]);
    const row = await f.raw.hgetall(queueKeys(q).job(id));
    expect(row).toMatchObject({ status: 'done', attempts: '2', result: '{"by":"X"}' });
    return { row, state: await queueState(f.raw, q, [queueKeys(q).wake]) };
  }

  /** A queue's keys without its per-minute and per-hour metrics (`emq:{q}:stats:*`). */
  const withoutStats = (state: Record<string, KeyState>): Record<string, KeyState> => Object.fromEntries(Object.entries(state).filter(([key]) => !/:stats:[mh]:/.test(key)));

  /** The stale holder changed nothing: not the row, not any other key of the queue. */
  async function assertUntouched(q: string, id: string, before: Snapshot): Promise<void> {
    const k = queueKeys(q);
    expect(await f.raw.hgetall(k.job(id))).toEqual(before.row);
    // The metrics a consumer flushes (stats keys: its own run time) are not the queue's state.
    expect(withoutStats(await queueState(f.raw, q, [k.wake]))).toEqual(withoutStats(before.state));
    expect(await f.raw.zrange(k.done, 0, -1)).toEqual([id]);
    expect(await f.queues.counts(q)).toEqual({ scheduled: 0, pending: 0, active: 0, done: 1, dead: 0, cancelled: 0, waiting: 0 });
    const job = await f.queues.getJob(q, id);
    expect(job).toMatchObject({ status: 'done', attempts: 2, result: { by: 'X' } });
  }

  it('a Consumer frozen past its lease cannot overwrite the result once it resumes', async () => {
    const q = randomQueue('stall');
    const id = await f.queues.enqueue(q, { n: 1 });
    const child = spawnFixture('consumer-child', [testUrl(), q, '1000', 'stall']);
    const [, startedId, staleToken] = await child.waitForLine(/^STARTED (\S+) (\d+) 1$/);
    expect(startedId).toBe(id);

    const before = await reclaimWhileStopped(q, id, child);
    expect(BigInt(before.row.token)).toBeGreaterThan(BigInt(staleToken));

    // Resume the holder: its handler finishes with Y, then the Consumer stops (flushing any
    // completion it still holds) and the child reports STOPPED.
    child.send('finish {"by":"Y"}', 'stop');
    child.signal('SIGCONT');
    await child.waitForLine(/^HANDLER_DONE /);
    await child.waitForLine(/^STOPPED$/);

    // Whatever completion the stale holder sent was refused by the fencing token.
    const sent = child.lines.filter((l) => l.startsWith('COMPLETE '));
    expect(sent.length).toBeLessThanOrEqual(1);
    for (const line of sent) {
      const [, reply, tokens] = /^COMPLETE (\S+) (\S+)$/.exec(line) ?? [];
      expect(JSON.parse(tokens)).toEqual([staleToken]);
      expect(JSON.parse(reply)).toEqual([0]);
    }
    await assertUntouched(q, id, before);
    // Whichever comes first after SIGCONT: its lease check marks the job lost (nothing is sent),
    // or its completion goes out and is refused by the fence, which it reports. Nothing else.
    await new Promise((r) => setTimeout(r, 300));
    const lines = child.stderr().trim().split('\n').filter((l) => l !== '');
    for (const line of lines) {
      expect(line).toBe(`warn: job ${id} of "${q}" finished attempt 1, but its completion was refused (error: lease lost; the job was re-delivered)`);
    }
  });

  it('a f.raw holder frozen past its lease gets [0] from complete, and the row is unchanged', async () => {
    const q = randomQueue('stall-wire');
    const id = await f.queues.enqueue(q, { n: 2 });
    const child = spawnFixture('consumer-child', [testUrl(), q, '1000', 'claim']);
    const [, claimedId, staleToken, attempt] = await child.waitForLine(/^CLAIMED (\S+) (\d+) (\d+)$/);
    expect([claimedId, attempt]).toEqual([id, '1']);

    const before = await reclaimWhileStopped(q, id, child);
    child.send('finish {"by":"Y"}', 'stop');
    child.signal('SIGCONT');
    const [, reply] = await child.waitForLine(/^COMPLETE (.*)$/);
    expect(JSON.parse(reply)).toEqual([0]);
    await child.waitForLine(/^STOPPED$/);
    expect(BigInt(before.row.token)).toBeGreaterThan(BigInt(staleToken));
    await assertUntouched(q, id, before);
  });

  it('at the wire level, a token superseded by a re-claim is refused by complete, extend and retry', async () => {
    const q = randomQueue('fence');
    const k = queueKeys(q);
    const c = f.conn.scriptClient;
    const id = f.conn.ids.next('job');
    const other = f.conn.ids.next('job');
    expect(await wire.enqueue(c, k, 1024, [{ id, payload: '{"n":3}', delayMs: 0, runAtMs: 0 }])).toEqual([1]);

    const first = await wire.claim(c, k, 1, 50);
    expect(first.jobs.map((j) => [j.id, j.attempt])).toEqual([[id, 1]]);
    const t1 = first.jobs[0].token;

    await eventually(async () => (await wire.reap(c, k, 10, 3, 100)).requeued === 1, 10_000, 'the lease to expire and be reaped');
    expect(await f.raw.hgetall(k.job(id))).toMatchObject({ status: 'pending', error: 'lease expired', attempts: '1' });
    // Refused while pending, too.
    expect(await wire.complete(c, k, 1000, [{ id, token: t1, result: '"Y"' }])).toEqual([0]);
    expect(await wire.extend(c, k, 60_000, [{ id, token: t1 }])).toEqual([0]);

    const second = await wire.claim(c, k, 1, 60_000);
    expect(second.jobs.map((j) => [j.id, j.attempt])).toEqual([[id, 2]]);
    const t2 = second.jobs[0].token;
    expect(BigInt(t2)).toBeGreaterThan(BigInt(t1));

    const rowBefore = await f.raw.hgetall(k.job(id));
    const stateBefore = await queueState(f.raw, q);
    const leaseBefore = await f.raw.zscore(k.active, id);
    expect(rowBefore).toMatchObject({ status: 'active', token: t2, attempts: '2' });

    expect(await wire.complete(c, k, 1000, [{ id, token: t1, result: '"Y"' }])).toEqual([0]);
    expect(await wire.extend(c, k, 600_000, [{ id, token: t1 }])).toEqual([0]);
    const defaults = { maxAttempts: 3, backoff: 'f:10', deadCap: 100 };
    expect((await wire.retry(c, k, { id, token: t1, error: 'stale boom', fatal: true }, defaults)).outcome).toBe('stale');
    expect((await wire.retry(c, k, { id, token: t1, error: 'stale boom', fatal: false }, defaults)).outcome).toBe('stale');

    expect(await f.raw.hgetall(k.job(id))).toEqual(rowBefore);
    expect(await queueState(f.raw, q)).toEqual(stateBefore);
    expect(await f.raw.zscore(k.active, id)).toBe(leaseBefore);
    expect(await f.queues.counts(q)).toEqual({ scheduled: 0, pending: 0, active: 1, done: 0, dead: 0, cancelled: 0, waiting: 0 });

    // In a batch, only the stale entry is refused.
    expect(await wire.enqueue(c, k, 1024, [{ id: other, payload: '{"n":4}', delayMs: 0, runAtMs: 0 }])).toEqual([1]);
    const third = await wire.claim(c, k, 1, 60_000);
    const t3 = third.jobs[0].token;
    const reply = await wire.complete(c, k, 1000, [
      { id, token: t1, result: '"Y"' },
      { id: other, token: t3, result: '"Z"' },
    ]);
    expect(reply).toEqual([0, 1]);
    expect(await f.raw.hgetall(k.job(id))).toEqual(rowBefore);

    // The live token completes; afterwards it is spent as well.
    expect(await wire.complete(c, k, 1000, [{ id, token: t2, result: '"X"' }])).toEqual([1]);
    const done = await f.raw.hgetall(k.job(id));
    expect(done).toMatchObject({ status: 'done', result: '"X"', attempts: '2', token: t2 });
    const stateDone = await queueState(f.raw, q);
    expect(await wire.complete(c, k, 1000, [{ id, token: t2, result: '"again"' }])).toEqual([0]);
    expect(await wire.extend(c, k, 60_000, [{ id, token: t2 }])).toEqual([0]);
    expect((await wire.retry(c, k, { id, token: t2, error: 'late', fatal: false }, defaults)).outcome).toBe('stale');
    expect(await f.raw.hgetall(k.job(id))).toEqual(done);
    expect(await queueState(f.raw, q)).toEqual(stateDone);
    expect((await f.raw.zrange(k.done, 0, -1)).sort()).toEqual([id, other].sort());
    expect(await f.queues.counts(q)).toEqual({ scheduled: 0, pending: 0, active: 0, done: 2, dead: 0, cancelled: 0, waiting: 0 });
  });
});
