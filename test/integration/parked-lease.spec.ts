import { queueKeys } from '../../src/protocol/keys.js';
import { parkCall, parkSpot, parkedClaimCall } from '../../src/protocol/park-wire.js';
import { call, scripts } from '../../src/protocol/scripts.js';
import { calls } from '../../src/protocol/wire.js';
import { ParkedWait } from '../../src/queue/parked-wait.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, queueKeysIn, randomQueue } from '../helpers/valkey.js';

/**
 * Parked consumers (docs/protocol.md §5, "Parked consumers"): an idle consumer registers, and
 * enqueue leases a plain job onto an empty queue straight to it. The wire's rules are in conformance/scenarios/parked.json;
 * these tests hold the consumer's side: the lease arrives without a claim call, nothing is lost at
 * stop, at a crash, after a script flush, or when the wait ends the other way.
 */
describe('parked consumers: enqueue leases a job straight to an idle consumer', () => {
  const f = queueFixture();

  const parkedCount = (q: string) => f.raw.zcard(queueKeys(q).parked);

  /**
   * The claim.lua calls Valkey ran while `body` ran (SLOWLOG at threshold 0): `plain` claims of
   * their own (9 keys), `parked` the conditional ones pipelined behind a parked wait (11 keys).
   */
  async function claimCalls(body: () => Promise<void>): Promise<{ plain: number; parked: number }> {
    const [, was] = (await f.raw.config('GET', 'slowlog-log-slower-than')) as string[];
    await f.raw.config('SET', 'slowlog-log-slower-than', '0');
    await f.raw.slowlog('RESET');
    try {
      await body();
    } finally {
      await f.raw.config('SET', 'slowlog-log-slower-than', was);
    }
    const log = (await f.raw.slowlog('GET', 10_000)) as [number, number, number, string[]][];
    const sha = scripts().get('claim')!.sha;
    const claims = log.filter((e) => String(e[3][0]).toLowerCase() === 'evalsha' && e[3][1] === sha);
    return { plain: claims.filter((e) => e[3][2] === '9').length, parked: claims.filter((e) => e[3][2] === '11').length };
  }

  it('a job enqueued onto an empty queue reaches the parked consumer without a claim of its own, and completes', async () => {
    const q = randomQueue('park');
    const seen: { id: string; attempt: number; payload: unknown }[] = [];
    const { consumer, log } = await startConsumer(f.conn, q, (job) => {
      seen.push({ id: job.id, attempt: job.attempt, payload: job.payload });
      return null;
    }, { concurrency: 2 });
    f.consumers.push(consumer);
    await eventually(async () => (await parkedCount(q)) === 1, 5000, 'the consumer to park');
    let id = '';
    const claims = await claimCalls(async () => {
      id = await f.queues.enqueue(q, { n: 7 });
      await eventually(() => seen.length === 1, 5000, 'the job to run');
    });
    // No claim of its own: only the one behind the wait ran, found the registration used up
    // and took nothing (the job's only attempt is the lease enqueue gave it).
    expect(claims).toEqual({ plain: 0, parked: 1 });
    expect(seen).toEqual([{ id, attempt: 1, payload: { n: 7 } }]);
    const k = queueKeys(q);
    await eventually(async () => (await f.raw.zscore(k.done, id)) !== null, 5000, 'the completion');
    expect(await f.raw.hget(k.claimedRow(id), 'status')).toBe('done');
    // Parked again, and the inbox empty.
    await eventually(async () => (await parkedCount(q)) === 1, 5000, 'the consumer to park again');
    expect((await queueKeysIn(f.raw, q)).filter((key) => key.includes(':inbox:'))).toEqual([]);
    expect(log.warnings).toEqual([]);
  });

  it('jobs enqueued one after another while the handler is busy still run in FIFO order', async () => {
    const q = randomQueue('park');
    const order: number[] = [];
    const { consumer } = await startConsumer(f.conn, q, async (job) => {
      order.push((job.payload as { i: number }).i);
      await new Promise((r) => setTimeout(r, 3));
      return null;
    }, { concurrency: 1, prefetch: 0 });
    f.consumers.push(consumer);
    await eventually(async () => (await parkedCount(q)) === 1, 5000, 'the consumer to park');
    for (let i = 0; i < 40; i++) {
      await f.queues.enqueue(q, { i });
      if (i % 3 === 0) await new Promise((r) => setTimeout(r, 4));
    }
    await eventually(() => order.length === 40, 10_000, 'the 40 jobs');
    expect(order).toEqual([...Array(40).keys()]);
  });

  it('stop while parked ends the registration, and nothing stays leased', async () => {
    const q = randomQueue('park');
    const { consumer } = await startConsumer(f.conn, q, () => null, { concurrency: 1 });
    await eventually(async () => (await parkedCount(q)) === 1, 5000, 'the consumer to park');
    await consumer.stop(1000);
    expect(await parkedCount(q)).toBe(0);
    const id = await f.queues.enqueue(q, { late: true });
    expect(await f.raw.lrange(queueKeys(q).pending, 0, -1)).toEqual([id]);
  });

  it('a job leased to a consumer that died parked is reaped when its lease ends and runs elsewhere', async () => {
    const q = randomQueue('park');
    const k = queueKeys(q);
    // A consumer that registered and died: its registration holds, nobody blocks on its inbox.
    const dead = parkSpot(k, 'dead1', 300);
    await call(f.conn.scriptClient, parkCall(k, dead, 5000));
    const id = await f.queues.enqueue(q, { orphan: 1 });
    expect(await f.raw.zscore(k.active, id)).not.toBeNull();
    expect(await f.raw.llen(dead.inbox)).toBe(1);
    expect(await f.raw.pttl(dead.inbox)).toBeLessThanOrEqual(300);
    const attempts: number[] = [];
    const { consumer } = await startConsumer(f.conn, q, (job) => {
      attempts.push(job.attempt);
      return null;
    }, { concurrency: 1, leaseMs: 300 });
    f.consumers.push(consumer);
    await eventually(() => attempts.length === 1, 10_000, 'the reaped job to run');
    expect(attempts).toEqual([2]);
    await eventually(async () => (await f.raw.zscore(k.done, id)) !== null, 5000, 'its completion');
  });

  it('after SCRIPT FLUSH the parked consumer loads park.lua again, and leases resume', async () => {
    const q = randomQueue('park');
    const ran: string[] = [];
    const { consumer, log } = await startConsumer(f.conn, q, (job) => {
      ran.push(job.id);
      return null;
    }, { concurrency: 1 });
    f.consumers.push(consumer);
    await eventually(async () => (await parkedCount(q)) === 1, 5000, 'the consumer to park');
    await f.raw.script('FLUSH');
    // The registration made before the flush takes job 0; the next park is refused NOSCRIPT,
    // loads the script and ends its wait at once, so the consumer registers again well before
    // its 1 s block would have run out.
    const first = await f.queues.enqueue(q, { first: 1 });
    await eventually(() => ran.includes(first), 5000, 'job 0 to run');
    await eventually(async () => (await parkedCount(q)) === 1, 500, 'the consumer registered again within 500 ms');
    for (let i = 0; i < 3; i++) {
      const id = await f.queues.enqueue(q, { i });
      await eventually(() => ran.includes(id), 5000, `job ${i} to run`);
    }
    const [loaded] = (await f.raw.script('EXISTS', scripts().get('park')!.sha)) as number[];
    expect(loaded).toBe(1);
    await eventually(async () => (await parkedCount(q)) === 1, 5000, 'the consumer registered again');
    const claims = await claimCalls(async () => {
      const id = await f.queues.enqueue(q, { last: 1 });
      await eventually(() => ran.includes(id), 5000, 'the last job to run');
    });
    expect(claims.plain).toBe(0);
    expect(log.warnings).toEqual([]);
  });

  it('several jobs enqueued in one call onto a parked consumer are taken by the claim behind its wait (no claim round)', async () => {
    const q = randomQueue('park');
    const ran: number[] = [];
    const { consumer, log } = await startConsumer(f.conn, q, (job) => {
      ran.push((job.payload as { i: number }).i);
      return null;
    }, { concurrency: 4 });
    f.consumers.push(consumer);
    await eventually(async () => (await parkedCount(q)) === 1, 5000, 'the consumer to park');
    const claims = await claimCalls(async () => {
      // Three jobs in one call: not leased by enqueue (one plain job only), so they go pending and wake the wait.
      await f.queues.enqueueMany(q, [0, 1, 2].map((i) => ({ payload: { i } })));
      await eventually(() => ran.length === 3, 5000, 'the three jobs');
    });
    expect([...ran].sort()).toEqual([0, 1, 2]);
    expect(claims.plain).toBe(0);
    expect(claims.parked).toBe(1);
    expect(log.warnings).toEqual([]);
  });

  it('claim.lua with a registration claims while it is current, answers { -3 } and writes nothing once it is used up, and refuses keys of another queue', async () => {
    const q = randomQueue('park');
    const k = queueKeys(q);
    const spot = parkSpot(k, 'cl1', 30_000);
    await f.queues.enqueueMany(q, [{ payload: { a: 1 } }, { payload: { a: 2 } }]);
    const claim = parkedClaimCall(calls.claim(k, 1, 30_000), spot);
    // No registration: used up (or never made) — nothing claimed, nothing written.
    const before = await f.raw.lrange(k.pending, 0, -1);
    expect(await call(f.conn.scriptClient, claim)).toEqual({ jobs: [], waitMs: -3 });
    expect(await f.raw.lrange(k.pending, 0, -1)).toEqual(before);
    expect(await f.raw.zcard(k.active)).toBe(0);
    // A current registration: a plain claim.
    await call(f.conn.scriptClient, parkCall(k, spot, 5000));
    const got = await call(f.conn.scriptClient, claim);
    expect(got.jobs.map((j) => JSON.parse(j.payload))).toEqual([{ a: 1 }]);
    expect(got.waitMs).toBe(-1);
    // Another queue's parked key, or an inbox that is not a tag: refused before anything.
    const other = queueKeys(randomQueue('park'));
    const wrong = { ...claim, keys: [...claim.keys.slice(0, 9), other.parked, spot.inbox] };
    await expect(call(f.conn.scriptClient, wrong)).rejects.toMatchObject({ code: 'EMQ_BAD_ARG' });
    const badTag = { ...claim, keys: [...claim.keys.slice(0, 10), k.inbox('a') + ':b'] };
    await expect(call(f.conn.scriptClient, badTag)).rejects.toMatchObject({ code: 'EMQ_BAD_ARG' });
    // A `parked` key of another type.
    await f.raw.del(k.parked);
    await f.raw.set(k.parked, 'x');
    await expect(call(f.conn.scriptClient, claim)).rejects.toMatchObject({ code: 'EMQ_WRONGTYPE' });
    await f.raw.del(k.parked);
    expect(await f.raw.llen(k.pending)).toBe(1);
  });

  it('settling a parked wait: inbox, used up after `wake`, the claim behind it, or a failed claim', async () => {
    const q = randomQueue('park');
    const k = queueKeys(q);
    const spot = parkSpot(k, 'race1', 30_000);
    const wait = new ParkedWait(f.conn, k, spot);
    const claim = calls.claim(k, 4, 30_000);
    await f.raw.rpush(spot.inbox, 'job00000000001 5 {"r":1}');
    // Replies of CLIENT ID, park.lua (1), BLPOP (the wake marker), the claim ({ -3 }: used up), ZREM (0).
    const got = await wait.settle(f.raw, [[null, 7], [null, 1], [null, [k.wake, '1']], [null, [-3]], [null, 0]], -2, claim);
    expect(got.claim).toBe(true);
    expect(got.claimed?.jobs).toEqual([{ id: 'job00000000001', token: '5', attempt: 1, payload: '{"r":1}', extras: '' }]);
    expect(await f.raw.exists(spot.inbox)).toBe(0);
    // A wait woken by its inbox takes that job and claims nothing more.
    const direct = await wait.settle(f.raw, [[null, 7], [null, 1], [null, [spot.inbox, 'job00000000002 6 {}']], [null, [-3]], [null, 0]], 1500, claim);
    expect(direct).toEqual({ claimed: { jobs: [{ id: 'job00000000002', token: '6', attempt: 1, payload: '{}', extras: '' }], waitMs: 1500 }, claim: false });
    // Woken by `wake` on a current registration: the claim's jobs are the wait's, no round needed.
    const claimed = await wait.settle(f.raw, [[null, 7], [null, 1], [null, [k.wake, '1']], [null, [-1, 'job00000000003', 9, 1, '{"c":3}', '']], [null, 1]], -2, claim);
    expect(claimed).toEqual({ claimed: { jobs: [{ id: 'job00000000003', token: '9', attempt: 1, payload: '{"c":3}', extras: '' }], waitMs: -1 }, claim: false });
    // The claim failed (NOSCRIPT after a flush): the consumer claims in a round.
    const failed = await wait.settle(f.raw, [[null, 7], [null, 1], [null, [k.wake, '1']], [new Error('NOSCRIPT No matching script'), null], [null, 1]], -2, claim);
    expect(failed).toEqual({ claimed: undefined, claim: true });
  });

  it('a consumer with a rate limit or a group policy never parks (its jobs go through the claim)', async () => {
    const q = randomQueue('park');
    let ran = 0;
    const { consumer } = await startConsumer(f.conn, q, () => {
      ran++;
      return null;
    }, { concurrency: 1, rateLimit: { max: 1000, intervalMs: 1000 } });
    f.consumers.push(consumer);
    await new Promise((r) => setTimeout(r, 100));
    expect(await parkedCount(q)).toBe(0);
    await f.queues.enqueue(q, { i: 1 });
    await eventually(() => ran === 1, 5000, 'the job to run');
    expect(await parkedCount(q)).toBe(0);
  });
});
