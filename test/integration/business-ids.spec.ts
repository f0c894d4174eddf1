/**
 * Business ids (issue 39, item 4): `enqueue(q, p, { id: 'order-42' })` is idempotent by that id
 * and finds the job by it, for as long as the job is kept, without a dedup window. The wire id
 * stays a minted one; the queue's refs hash maps both ways and goes with the job.
 */
import { queueKeys } from '../../src/core/keys.js';
import { PROTOCOL_VERSION, runScript } from '../../src/core/scripts.js';
import { QueueAdmin } from '../../src/admin/queue-admin.js';
import { wire } from '../../src/core/wire/queue.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { BUILTIN_DEFAULTS } from '../../src/queue/queue-options.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { codeOf, refusedUnchanged } from '../helpers/refusals.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

describe('business ids', () => {
  const f = queueFixture();
  let admin: QueueAdmin;
  beforeAll(() => {
    admin = new QueueAdmin(f.conn, f.queues);
  });

  it('enqueue by a business id twice adds one job; it is found by either id', async () => {
    const q = randomQueue('bid');
    const k = queueKeys(q);
    const a = await f.queues.enqueue(q, { n: 1 }, { id: 'order-42', name: 'ship' });
    const b = await f.queues.enqueue(q, { n: 2 }, { id: 'order-42' });
    expect(a).toMatch(/^job[0-9A-Za-z]{11}$/);
    expect(b).toBe(a);
    expect(await f.raw.hlen(k.data)).toBe(1);
    expect(await f.raw.hget(k.refs, 'order-42')).toBe(a);
    expect(await f.raw.hget(k.refs, a)).toBe('order-42');
    expect(await f.raw.hget(k.meta, 'refs')).toBe('1');
    const byRef = await f.queues.getJob(q, 'order-42');
    expect(byRef).toMatchObject({ id: a, ref: 'order-42', status: 'pending', payload: { n: 1 }, name: 'ship' });
    expect((await f.queues.getJob(q, a))?.ref).toBe('order-42');
    expect(await f.queues.getJob(q, 'order-43')).toBeNull();
    expect(await f.queues.jobId(q, 'order-42')).toBe(a);
    // Another business id, and a plain job in the same call: distinct jobs; repeats in one call share one.
    const [c, d, e] = await f.queues.enqueueMany(q, [
      { payload: 1, opts: { id: 'order-44' } },
      { payload: 2 },
      { payload: 3, opts: { id: 'order-44', delay: 5000 } },
    ]);
    expect(e).toBe(c);
    expect(new Set([a, c, d]).size).toBe(3);
    expect(await f.raw.hlen(k.data)).toBe(3);
    // Ten concurrent enqueues of one new business id: one job.
    const ids = await Promise.all(Array.from({ length: 10 }, (_, i) => f.queues.enqueue(q, { i }, { id: 'order-50' })));
    expect(new Set(ids).size).toBe(1);
    expect(await f.raw.hlen(k.data)).toBe(4);
  });

  it('cancel, change priority and admin calls take a business id; remove drops the mapping', async () => {
    const q = randomQueue('bidops');
    const k = queueKeys(q);
    const a = await f.queues.enqueue(q, { n: 1 }, { id: 'inv-1' });
    expect(await f.queues.changePriority(q, 'inv-1', 5)).toBe('changed');
    expect((await admin.job(q, 'inv-1')).id).toBe(a);
    expect(await f.queues.cancel(q, 'inv-1')).toBe('cancelled');
    expect((await f.queues.getJob(q, 'inv-1'))?.status).toBe('cancelled');
    expect(await f.queues.cancel(q, 'inv-unknown')).toBe('missing');
    expect(await codeOf(() => admin.remove(q, 'inv-unknown'))).toBe('EMQ_NOT_FOUND');
    expect(await admin.remove(q, 'inv-1')).toBe(true);
    expect(await f.raw.hexists(k.refs, 'inv-1')).toBe(0);
    expect(await f.raw.hexists(k.refs, a)).toBe(0);
    expect(await f.queues.getJob(q, 'inv-1')).toBeNull();
    const again = await f.queues.enqueue(q, { n: 2 }, { id: 'inv-1' });
    expect(again).not.toBe(a);
    // A scheduled job promoted by its business id.
    const late = await f.queues.enqueue(q, { n: 3 }, { id: 'inv-2', delay: 60_000 });
    expect(await admin.promote(q, 'inv-2')).toBe(true); // due now: the next claim takes it
    expect(Number(await f.raw.zscore(k.scheduled, late))).toBeLessThan(Date.now() + 30_000);
  });

  it('the flow reads take a business id too: getFlow, removeChildDependency, retryChild', async () => {
    const q = randomQueue('bidflow');
    const a = await f.queues.enqueue(q, { n: 1 }, { id: 'flow-1' });
    expect((await f.queues.flows.getFlow(q, 'flow-1'))?.id).toBe(a);
    expect(await f.queues.flows.getFlow(q, 'flow-404')).toBeNull();
    expect(await f.queues.flows.removeChildDependency(q, 'flow-404')).toBe(false);
    expect(await codeOf(() => f.queues.flows.retryChild(q, 'flow-404'))).toBe('EMQ_JOB_STATE');
    expect(await codeOf(() => f.queues.flows.attach(q, 'flow-1', [{ queue: q, payload: 1 }]))).toBe('EMQ_JOB_STATE'); // not a waiting parent
  });

  it('a job past its retention takes its business id with it; the id can be enqueued again', async () => {
    const q = randomQueue('bidkeep');
    const k = queueKeys(q);
    const { consumer } = await startConsumer(f.conn, q, () => 'ok', { keepDone: 2 });
    f.consumers.push(consumer);
    const a = await f.queues.enqueue(q, { n: 1 }, { id: 'pay-1' });
    await eventually(async () => (await f.queues.getJob(q, 'pay-1'))?.status === 'done', 3000, 'done');
    // Still kept: a repeat answers the finished job.
    expect(await f.queues.enqueue(q, { n: 2 }, { id: 'pay-1' })).toBe(a);
    for (let i = 0; i < 4; i++) await f.queues.enqueue(q, { i });
    await eventually(async () => (await f.raw.zcard(k.done)) === 2 && (await f.raw.hlen(k.data)) <= 2, 5000, 'trimmed');
    expect(await f.raw.exists(k.job(a))).toBe(0);
    expect(await f.raw.hexists(k.refs, 'pay-1')).toBe(0);
    expect(await f.raw.hexists(k.refs, a)).toBe(0);
    const b = await f.queues.enqueue(q, { n: 3 }, { id: 'pay-1' });
    expect(b).not.toBe(a);
    await eventually(async () => (await f.queues.getJob(q, 'pay-1'))?.status === 'done', 3000, 'done again');
  });

  it('keepDone 0, the morgue cap and the cancelled cap drop mappings with their rows', async () => {
    const q = randomQueue('bidzero');
    const k = queueKeys(q);
    const { consumer } = await startConsumer(f.conn, q, (job) => {
      if ((job.payload as { fail?: boolean }).fail) throw new Error('no');
      return 'ok';
    }, { keepDone: 0, deadCap: 1, attempts: 1 });
    f.consumers.push(consumer);
    const a = await f.queues.enqueue(q, {}, { id: 'z-1' });
    await eventually(async () => (await f.raw.hexists(k.refs, 'z-1')) === 0, 3000, 'z-1 dropped');
    expect(await f.raw.hexists(k.refs, a)).toBe(0);
    const d1 = await f.queues.enqueue(q, { fail: true }, { id: 'd-1' });
    await eventually(async () => (await f.queues.getJob(q, 'd-1'))?.status === 'dead', 3000, 'dead');
    await f.queues.enqueue(q, { fail: true }, { id: 'd-2' });
    await eventually(async () => (await f.queues.getJob(q, 'd-2'))?.status === 'dead', 3000, 'dead 2');
    expect(await f.raw.hexists(k.refs, 'd-1')).toBe(0);
    expect(await f.raw.hexists(k.refs, d1)).toBe(0);
    expect(await f.raw.hexists(k.refs, 'd-2')).toBe(1);
  });

  it('the cancelled set\'s trim drops the mappings of the rows it deletes', async () => {
    const q = randomQueue('bidcanc');
    const k = queueKeys(q);
    const one = new QueueService(f.conn, BUILTIN_DEFAULTS, { [q]: { keepCancelled: 1 } });
    const a = await one.enqueue(q, {}, { id: 'c-1' });
    const b = await one.enqueue(q, {}, { id: 'c-2' });
    expect(await one.cancel(q, 'c-1')).toBe('cancelled');
    expect(await one.cancel(q, 'c-2')).toBe('cancelled');
    expect([await f.raw.hexists(k.refs, 'c-1'), await f.raw.hexists(k.refs, a)]).toEqual([0, 0]);
    expect(await f.raw.hget(k.refs, 'c-2')).toBe(b);
  });

  it('purge and drain drop the mappings of the jobs they delete', async () => {
    const q = randomQueue('bidpurge');
    const k = queueKeys(q);
    const ids = await f.queues.enqueueMany(q, [1, 2, 3].map((i) => ({ payload: i, opts: { id: `p-${i}` } })));
    await admin.cancel(q, 'p-1');
    await admin.drain(q);
    expect(await f.raw.hexists(k.refs, 'p-2')).toBe(0);
    expect(await f.raw.hexists(k.refs, ids[2])).toBe(0);
    expect(await f.raw.hget(k.refs, 'p-1')).toBe(ids[0]); // cancelled: kept until purged
    await admin.purge(q, { status: 'cancelled', olderThanMs: 0 });
    expect(await f.raw.exists(k.refs)).toBe(0);
  });

  it('a queue without business ids has no refs hash and no meta flag', async () => {
    const q = randomQueue('bidnone');
    const k = queueKeys(q);
    const { consumer } = await startConsumer(f.conn, q, () => 'ok', { keepDone: 1 });
    f.consumers.push(consumer);
    const id = await f.queues.enqueue(q, {});
    await f.queues.enqueue(q, {});
    await eventually(async () => (await f.raw.zcard(k.done)) === 1 && (await f.raw.exists(k.job(id))) === 0, 3000, 'trimmed');
    expect(await f.raw.exists(k.refs)).toBe(0);
    expect(await f.raw.hget(k.meta, 'refs')).toBeNull();
  });

  it('completing without business ids runs no refs command; with them, two reads and one HDEL per call', async () => {
    const calls = async () => {
      const info = await f.raw.info('commandstats');
      const n = (cmd: string) => Number(new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
      return { hmget: n('hmget'), hdel: n('hdel'), hget: n('hget') };
    };
    const run = async (q: string, refs: boolean) => {
      const k = queueKeys(q);
      await f.queues.enqueueMany(q, [1, 2, 3].map((i) => ({ payload: i, opts: refs ? { id: `c-${i}` } : {} })));
      const { jobs } = await wire.claim(f.conn.scriptClient, k, 3, 30_000);
      const before = await calls();
      expect(await wire.complete(f.conn.scriptClient, k, 0, jobs.map((j) => ({ id: j.id, token: j.token, result: '1' })))).toEqual([1, 1, 1]);
      const after = await calls();
      return { hmget: after.hmget - before.hmget, hdel: after.hdel - before.hdel, hget: after.hget - before.hget, left: await f.raw.exists(k.refs) };
    };
    // INFO commandstats counts the whole server: a command of another client landing inside a
    // window (a consumer's upkeep left by an earlier test) spoils one pair, so a pair is taken
    // again, up to 5 times. A real extra command per call would spoil every pair.
    const clean = (p: Awaited<ReturnType<typeof run>>, r: Awaited<ReturnType<typeof run>>): boolean =>
      r.hdel - p.hdel === 1 && r.hmget - p.hmget === 2 && r.hget === p.hget;
    let plain = await run(randomQueue('bidcost'), false);
    let withRefs = await run(randomQueue('bidcost'), true);
    for (let i = 0; i < 4 && !clean(plain, withRefs); i++) {
      plain = await run(randomQueue('bidcost'), false);
      withRefs = await run(randomQueue('bidcost'), true);
    }
    expect(withRefs.left).toBe(0);
    expect(withRefs.hdel - plain.hdel).toBe(1);
    expect(withRefs.hmget - plain.hmget).toBe(2);
    expect(withRefs.hget).toBe(plain.hget);
  });

  it('bad business ids are refused with EMQ_BAD_ID, nothing written', async () => {
    const q = randomQueue('bidbad');
    await f.queues.enqueue(q, {}, { id: 'ok-1' });
    for (const bad of ['', 'x'.repeat(201), 'a\nb', 'tab\there', 'del\x7f', 'jobZZZZZZZZZZZ']) {
      await refusedUnchanged(f.raw, q, 'EMQ_BAD_ID', () => f.queues.enqueue(q, {}, { id: bad }));
      await refusedUnchanged(f.raw, q, 'EMQ_BAD_ID', () => f.queues.enqueueMany(q, [{ payload: 1, opts: { id: 'fine' } }, { payload: 2, opts: { id: bad } }]));
    }
    expect(await codeOf(() => f.queues.getJob(q, 'a\nb'))).toBe('EMQ_BAD_ID');
    expect(await codeOf(() => admin.job(q, ''))).toBe('EMQ_BAD_ID');
    // 200 bytes (multi-byte characters count in bytes) is the most.
    expect(await f.queues.enqueue(q, {}, { id: 'é'.repeat(100) })).toMatch(/^job/);
    expect(await codeOf(() => f.queues.enqueue(q, {}, { id: 'é'.repeat(100) + 'x' }))).toBe('EMQ_BAD_ID');
  });

  it('the script refuses malformed business-id arguments with EMQ_BAD_ARG, nothing written', async () => {
    const q = randomQueue('bidlua');
    const k = queueKeys(q);
    await f.queues.enqueue(q, {}, { id: 'seed' });
    const base = [k.meta, k.pending, k.scheduled, k.wake, k.data, k.opts, k.events];
    const id = f.conn.ids.next('job');
    const call = (ref: string, keys = [...base, k.refs], extra: string[] = []) => runScript(f.conn.scriptClient, 'enqueue', keys, [PROTOCOL_VERSION, 1024, 1, '', id, '{}', ...extra, ref]);
    for (const bad of ['x'.repeat(201), 'a\u0001b', 'job0000000000A', id]) {
      await refusedUnchanged(f.raw, q, 'EMQ_BAD_ARG', () => call(bad));
    }
    // The refs key of another queue is not this queue's: taken as a dedup key and refused.
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_ARG', () => call('r', [...base, queueKeys(`${q}x`).refs]));
    // Missing the business id argument: a wrong count.
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_ARG', () => runScript(f.conn.scriptClient, 'enqueue', [...base, k.refs], [PROTOCOL_VERSION, 1024, 1, '', id, '{}']));
    // A refs key of the wrong type.
    const other = randomQueue('bidtype');
    const ko = queueKeys(other);
    await f.raw.set(ko.refs, 'x');
    await refusedUnchanged(f.raw, other, 'EMQ_WRONGTYPE', () => runScript(f.conn.scriptClient, 'enqueue', [ko.meta, ko.pending, ko.scheduled, ko.wake, ko.data, ko.opts, ko.events, ko.refs], [PROTOCOL_VERSION, 1024, 1, '', id, '{}', 'r']));
    await f.raw.del(ko.refs);
    // "" is no business id: the job is added without one.
    expect(await call('')).toEqual([1]);
    expect(await f.raw.hexists(k.refs, id)).toBe(0);
  });
});
