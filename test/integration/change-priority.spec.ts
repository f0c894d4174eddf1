/**
 * `QueueService.changePriority` (priority.lua; docs/queue.md "Changing a job's priority"): a
 * waiting job moves to its new level (the back of its line), a scheduled one carries it to its
 * promotion, and a job that does not wait, or waits in a lane, is refused writing nothing.
 */
import { queueKeys, wire } from '../../src/protocol.js';
import { refusedUnchanged } from '../helpers/refusals.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue } from '../helpers/valkey.js';

const f = queueFixture();

/** Claims up to n jobs the way a consumer does; answers their ids in claim order. */
async function claimIds(q: string, n: number): Promise<string[]> {
  const r = await wire.claim(f.conn.scriptClient, queueKeys(q), n, 30_000);
  return r.jobs.map((j) => j.id);
}

describe('changePriority', () => {
  it('moves a pending job of a plain queue to its level: claimed first, the others keep their order', async () => {
    const q = randomQueue('chp');
    const k = queueKeys(q);
    const [a, b, c] = await f.queues.enqueueMany(q, [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    expect(await f.queues.changePriority(q, c, 5)).toBe('changed');
    expect(await f.raw.lrange(k.pendingAt(5), 0, -1)).toEqual([c]);
    expect(await f.raw.lrange(k.pending, 0, -1)).toEqual([b, a]);
    expect(await f.raw.hget(k.meta, 'lanes')).toBe('1');
    expect((await f.queues.counts(q)).pending).toBe(3);
    expect(await claimIds(q, 3)).toEqual([c, a, b]);
  });

  it('joins the back of its new level (FIFO by arrival in the level) and back to 0 the back of pending', async () => {
    const q = randomQueue('chp');
    const k = queueKeys(q);
    const a = await f.queues.enqueue(q, 'a');
    const x = await f.queues.enqueue(q, 'x', { priority: 5 });
    const y = await f.queues.enqueue(q, 'y');
    expect(await f.queues.changePriority(q, a, 5)).toBe('changed');
    expect(await f.queues.changePriority(q, a, 5)).toBe('unchanged');
    expect(await f.raw.lrange(k.pendingAt(5), 0, -1)).toEqual([a, x]);
    expect(await f.queues.changePriority(q, x, 0)).toBe('changed');
    expect(await f.raw.lrange(k.pending, 0, -1)).toEqual([x, y]);
    expect(await claimIds(q, 3)).toEqual([a, y, x]);
    expect(await f.raw.exists(k.levels)).toBe(0);
  });

  it('moves the last job of a level out: the level leaves `levels`, the job is claimed in its new place', async () => {
    const q = randomQueue('chp');
    const k = queueKeys(q);
    const p = await f.queues.enqueue(q, 'p', { priority: 3 });
    const r = await f.queues.enqueue(q, 'r', { priority: 2 });
    expect(await f.queues.changePriority(q, p, 1)).toBe('changed');
    expect(await f.raw.zrange(k.levels, 0, -1)).toEqual(['1', '2']);
    expect(await claimIds(q, 2)).toEqual([r, p]);
  });

  it('a scheduled job keeps its run-at and options and is promoted into its new level', async () => {
    const q = randomQueue('chp');
    const k = queueKeys(q);
    const plain = await f.queues.enqueue(q, 'plain');
    const s = await f.queues.enqueue(q, 's', { delay: 150, attempts: 3, timeoutMs: 5000 });
    const at = await f.raw.zscore(k.scheduled, s);
    expect(await f.queues.changePriority(q, s, 7)).toBe('changed');
    expect(await f.raw.zscore(k.scheduled, s)).toBe(at);
    expect(await f.raw.hget(k.opts, s)).toBe('3||7|{"t":5000}');
    await new Promise((res) => setTimeout(res, 200));
    expect(await claimIds(q, 2)).toEqual([s, plain]);
    const view = await f.queues.getJob(q, s);
    expect(view?.maxAttempts).toBe(3);
  });

  it('a scheduled job without own options back to 0 drops its opts entry', async () => {
    const q = randomQueue('chp');
    const k = queueKeys(q);
    const s = await f.queues.enqueue(q, 's', { delay: 60_000, priority: 4 });
    expect(await f.raw.hget(k.opts, s)).toBe('||4');
    expect(await f.queues.changePriority(q, s, 0)).toBe('changed');
    expect(await f.raw.hexists(k.opts, s)).toBe(0);
  });

  it('a retried job waiting for its backoff (a row) carries the level in its row', async () => {
    const q = randomQueue('chp');
    const k = queueKeys(q);
    const j = await f.queues.enqueue(q, 'j');
    const [claimed] = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs;
    const r = await wire.retry(f.conn.scriptClient, k, { id: claimed.id, token: claimed.token, error: 'Error: once', fatal: false }, { maxAttempts: 5, backoff: 'f:60000', deadCap: 1000 });
    expect(r.outcome).toBe('retry');
    expect(await f.queues.changePriority(q, j, 6)).toBe('changed');
    expect(await f.raw.hget(k.job(j), 'prio')).toBe('6');
    expect(await f.raw.hget(k.meta, 'lanes')).toBe('1');
  });

  it('refuses, writing nothing, a job that is active, done, cancelled, in a lane, missing; and a bad priority', async () => {
    const q = randomQueue('chp');
    const k = queueKeys(q);
    const active = await f.queues.enqueue(q, 'active');
    const [claimed] = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs;
    expect(claimed.id).toBe(active);
    const done = await f.queues.enqueue(q, 'done');
    const [c2] = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs;
    await wire.complete(f.conn.scriptClient, k, 100, [{ id: c2.id, token: c2.token, result: '' }]);
    expect((await f.queues.getJob(q, done))?.status).toBe('done');
    const cancelled = await f.queues.enqueue(q, 'cancelled');
    await f.queues.cancel(q, cancelled);
    const laned = await f.queues.enqueue(q, 'laned', { lane: 'acme' });
    const later = await f.queues.enqueue(q, 'later', { lane: 'acme', delay: 60_000 });
    await refusedUnchanged(f.raw, q, 'EMQ_JOB_STATE', () => f.queues.changePriority(q, active, 3));
    await refusedUnchanged(f.raw, q, 'EMQ_JOB_STATE', () => f.queues.changePriority(q, done, 3));
    await refusedUnchanged(f.raw, q, 'EMQ_JOB_STATE', () => f.queues.changePriority(q, cancelled, 3));
    await refusedUnchanged(f.raw, q, 'EMQ_JOB_STATE', () => f.queues.changePriority(q, laned, 3));
    await refusedUnchanged(f.raw, q, 'EMQ_JOB_STATE', () => f.queues.changePriority(q, later, 3));
    await refusedUnchanged(f.raw, q, 'EMQ_NOT_FOUND', () => f.queues.changePriority(q, f.queues.mintId(), 3));
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () => f.queues.changePriority(q, laned, 10));
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () => f.queues.changePriority(q, laned, 1.5));
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_ID', () => f.queues.changePriority(q, 'jobzzzzzzzzzzz', 1));
    await refusedUnchanged(f.raw, q, 'EMQ_NOT_FOUND', () => f.queues.changePriority(q, 'nope', 1)); // a business id no job holds
  });
});
