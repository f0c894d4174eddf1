/**
 * Cancelling an active job is not lost when its attempt ends (issue 7 #6): a flagged job that stops
 * without completing — retry, reap of an expired lease, release at shutdown — ends `cancelled`;
 * a flagged job that completes is done (the work was done).
 */
import { queueKeys } from '../../src/core/keys.js';
import { wire } from '../../src/core/wire/queue.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue } from '../helpers/valkey.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('cancel of an active job', () => {
  const f = queueFixture();

  /** Enqueues one job (with a lifecycle log), claims it with `leaseMs`, flags it by cancel. */
  async function flagged(leaseMs = 30_000) {
    const q = randomQueue('cact');
    const k = queueKeys(q);
    const id = f.queues.mintId();
    await wire.enqueue(f.conn.scriptClient, k, 1024, [{ id, payload: '{"p":1}', delayMs: 0, runAtMs: 0 }], 100);
    const claim = await wire.claim(f.conn.scriptClient, k, 1, leaseMs);
    expect(claim.jobs.map((j) => j.id)).toEqual([id]);
    expect(await f.queues.cancel(q, id)).toBe('flagged');
    return { q, k, id, token: claim.jobs[0].token };
  }

  /** The job ended cancelled: in the cancelled set only, row and payload kept, event logged. */
  async function expectCancelled(q: string, id: string) {
    const k = queueKeys(q);
    const job = await f.queues.getJob(q, id);
    expect(job).toMatchObject({ status: 'cancelled', cancelRequested: true, payload: { p: 1 } });
    expect(job?.finishedAt).toBeInstanceOf(Date);
    expect(await f.raw.zscore(k.cancelled, id)).not.toBeNull();
    for (const key of [k.active, k.scheduled, k.dead]) expect(await f.raw.zscore(key, id)).toBeNull();
    expect(await f.raw.lrange(k.pending, 0, -1)).toEqual([]);
    const log = await f.raw.xrange(k.events, '-', '+');
    expect(log.filter(([, fields]) => fields[1] === 'cancelled' && fields[3] === id)).toHaveLength(1);
    expect(await f.queues.counts(q)).toMatchObject({ pending: 0, active: 0, scheduled: 0, dead: 0, cancelled: 1 });
  }

  it('retry of a flagged job ends it cancelled, not scheduled again', async () => {
    const { q, k, id, token } = await flagged();
    const r = await wire.retry(f.conn.scriptClient, k, { id, token, error: 'Error: boom', fatal: false }, { maxAttempts: 5, backoff: 'f:10', deadCap: 100 });
    expect(r.outcome).toBe('cancelled');
    await expectCancelled(q, id);
    expect((await f.queues.getJob(q, id))?.error).toBe('Error: boom');
  });

  it('a fatal retry (or the last attempt) of a flagged job ends it cancelled, not buried', async () => {
    const { q, k, id, token } = await flagged();
    const r = await wire.retry(f.conn.scriptClient, k, { id, token, error: 'Fatal', fatal: true }, { maxAttempts: 1, backoff: 'f:10', deadCap: 100 });
    expect(r.outcome).toBe('cancelled');
    await expectCancelled(q, id);
  });

  it('reap of a flagged job whose lease expired ends it cancelled, not pending again', async () => {
    const { q, k, id } = await flagged(50);
    await sleep(120);
    const r = await wire.reap(f.conn.scriptClient, k, 100, 5, 100);
    expect(r).toEqual({ requeued: 0, buried: 0, cancelled: 1, jobs: [{ id, attempt: 1, outcome: 'cancelled' }] });
    await expectCancelled(q, id);
  });

  it('release (shutdown) of a flagged job ends it cancelled, not pending again', async () => {
    const { q, k, id, token } = await flagged();
    expect(await wire.release(f.conn.scriptClient, k, [{ id, token }])).toEqual([2]);
    await expectCancelled(q, id);
  });

  it('complete of a flagged job still completes it: the work was done', async () => {
    const { q, k, id, token } = await flagged();
    expect(await wire.complete(f.conn.scriptClient, k, 100, [{ id, token, result: '"r"' }])).toEqual([1]);
    expect(await f.queues.getJob(q, id)).toMatchObject({ status: 'done', result: 'r', cancelRequested: true });
    expect(await f.raw.zscore(k.cancelled, id)).toBeNull();
  });

  it('the cancelled retention holds for jobs cancelled at the end of their attempt', async () => {
    const q = randomQueue('cret');
    const k = queueKeys(q);
    const ids = [f.queues.mintId(), f.queues.mintId(), f.queues.mintId()];
    await wire.enqueue(f.conn.scriptClient, k, 1024, ids.map((id) => ({ id, payload: '{"p":1}', delayMs: 0, runAtMs: 0 })));
    const claim = await wire.claim(f.conn.scriptClient, k, 3, 30_000);
    // keepCancelled 2, recorded by cancel in the queue's meta; retry honours it.
    for (const id of ids) expect(await wire.cancel(f.conn.scriptClient, k, id, 2)).toBe(2);
    for (const j of claim.jobs) {
      await wire.retry(f.conn.scriptClient, k, { id: j.id, token: j.token, error: 'e', fatal: false }, { maxAttempts: 5, backoff: 'f:10', deadCap: 100 });
    }
    expect(await f.raw.zcard(k.cancelled)).toBe(2);
    expect(await f.raw.exists(k.job(ids[0]))).toBe(0);
    expect(await f.raw.hexists(k.data, ids[0])).toBe(0);
  });
});
