import { queueKeys } from '../../src/protocol/keys.js';
import { parkCall, parkSpot } from '../../src/protocol/park-wire.js';
import { call, scripts } from '../../src/protocol/scripts.js';
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

  /** The claim.lua calls Valkey ran while `body` ran (SLOWLOG at threshold 0). */
  async function claimCalls(body: () => Promise<void>): Promise<number> {
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
    return log.filter((e) => String(e[3][0]).toLowerCase() === 'evalsha' && e[3][1] === sha).length;
  }

  it('a job enqueued onto an empty queue reaches the parked consumer without a claim call, and completes', async () => {
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
    expect(claims).toBe(0);
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
    expect(claims).toBe(0);
    expect(log.warnings).toEqual([]);
  });

  it('a wait that ended on `wake` while its registration was used up pops the leased job from the inbox', async () => {
    const q = randomQueue('park');
    const k = queueKeys(q);
    const spot = parkSpot(k, 'race1', 30_000);
    const wait = new ParkedWait(f.conn, k, spot);
    await f.raw.rpush(spot.inbox, 'job00000000001 5 {"r":1}');
    // Replies of CLIENT ID, park.lua (1), BLPOP (the wake marker), ZREM (0: used up meanwhile).
    const got = await wait.settle(f.raw, [[null, 7], [null, 1], [null, [k.wake, '1']], [null, 0]], -2);
    expect(got.claim).toBe(true);
    expect(got.claimed?.jobs).toEqual([{ id: 'job00000000001', token: '5', attempt: 1, payload: '{"r":1}', extras: '' }]);
    expect(await f.raw.exists(spot.inbox)).toBe(0);
    // A wait woken by its inbox takes that job and claims nothing more.
    const direct = await wait.settle(f.raw, [[null, 7], [null, 1], [null, [spot.inbox, 'job00000000002 6 {}']], [null, 0]], 1500);
    expect(direct).toEqual({ claimed: { jobs: [{ id: 'job00000000002', token: '6', attempt: 1, payload: '{}', extras: '' }], waitMs: 1500 }, claim: false });
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
