import { queueKeys } from '../../src/core/keys.js';
import { parkCall, parkSpot, parkedClaimCall } from '../../src/core/wire/park.js';
import { call, scripts } from '../../src/core/scripts.js';
import { calls } from '../../src/core/wire/queue.js';
import { ParkedWait } from '../../src/queue/consumer/parked-wait.js';
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
   * their own (9 keys), `parked` the ones a parked wait sends ahead of its BLPOP (11 keys, or in a
   * round.lua call behind the completions of handlers that ended at once).
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
    // A parked wait that sends completions with its claim sends them in one round.lua call.
    const round = scripts().get('round')!.sha;
    const parkedRounds = log.filter((e) => String(e[3][0]).toLowerCase() === 'evalsha' && e[3][1] === round && e[3].slice(3, 3 + Number(e[3][2])).some((key) => String(key).endsWith(':parked')));
    return { plain: claims.filter((e) => e[3][2] === '9').length, parked: claims.filter((e) => e[3][2] === '11').length + parkedRounds.length };
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
      await eventually(async () => (await f.raw.zscore(queueKeys(q).done, id)) !== null, 5000, 'the completion');
    });
    // No claim of its own (the job's only attempt is the lease enqueue gave it): the one parked
    // claim is the next wait's, sent with the job's completion (the handler ended at once), which
    // found nothing pending.
    expect(claims).toEqual({ plain: 0, parked: 1 });
    expect(seen).toEqual([{ id, attempt: 1, payload: { n: 7 } }]);
    const k = queueKeys(q);
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

  it('after SCRIPT FLUSH the parked consumer loads claim.lua again, and leases resume', async () => {
    const q = randomQueue('park');
    const ran: string[] = [];
    const { consumer, log } = await startConsumer(f.conn, q, (job) => {
      ran.push(job.id);
      return null;
    }, { concurrency: 1 });
    f.consumers.push(consumer);
    await eventually(async () => (await parkedCount(q)) === 1, 5000, 'the consumer to park');
    await f.raw.script('FLUSH');
    // The registration made before the flush takes job 0; the next wait's claim is refused
    // NOSCRIPT, loads the script and ends its wait at once, so the consumer registers again well
    // before its 1 s block would have run out.
    const first = await f.queues.enqueue(q, { first: 1 });
    await eventually(() => ran.includes(first), 5000, 'job 0 to run');
    await eventually(async () => (await parkedCount(q)) === 1, 500, 'the consumer registered again within 500 ms');
    for (let i = 0; i < 3; i++) {
      const id = await f.queues.enqueue(q, { i });
      await eventually(() => ran.includes(id), 5000, `job ${i} to run`);
    }
    const [loaded] = (await f.raw.script('EXISTS', scripts().get('claim')!.sha)) as number[];
    expect(loaded).toBe(1);
    await eventually(async () => (await parkedCount(q)) === 1, 5000, 'the consumer registered again');
    const claims = await claimCalls(async () => {
      const id = await f.queues.enqueue(q, { last: 1 });
      await eventually(() => ran.includes(id), 5000, 'the last job to run');
    });
    expect(claims.plain).toBe(0);
    expect(log.warnings).toEqual([]);
  });

  it('several jobs enqueued in one call onto a parked consumer are taken by the claim of its next wait (no claim round)', async () => {
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
    expect(log.warnings).toEqual([]);
  });

  it('a job that went pending while the consumer was busy is taken by the claim its next wait sends first', async () => {
    const q = randomQueue('park');
    const ran: string[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    const { consumer, log } = await startConsumer(f.conn, q, async (job) => {
      ran.push(job.id);
      if (ran.length === 1) await held;
      return null;
    }, { concurrency: 1, prefetch: 0 });
    f.consumers.push(consumer);
    await eventually(async () => (await parkedCount(q)) === 1, 5000, 'the consumer to park');
    const first = await f.queues.enqueue(q, { n: 1 });
    await eventually(() => ran.length === 1, 5000, 'the first job');
    // No free slot: the consumer is not registered, so the second job waits in `pending`.
    const second = await f.queues.enqueue(q, { n: 2 });
    expect(await f.raw.lrange(queueKeys(q).pending, 0, -1)).toEqual([second]);
    const claims = await claimCalls(async () => {
      release();
      await eventually(() => ran.length === 2, 5000, 'the second job');
    });
    expect(ran).toEqual([first, second]);
    expect(claims.plain).toBe(0);
    expect(claims.parked).toBeGreaterThanOrEqual(1);
    expect(log.warnings).toEqual([]);
  });

  it('a delayed job enqueued onto a parked consumer runs when due, not when the block would have ended', async () => {
    const q = randomQueue('park');
    const ran: number[] = [];
    const { consumer } = await startConsumer(f.conn, q, () => {
      ran.push(Date.now());
      return null;
    }, { concurrency: 2, maxIdleMs: 5000 });
    f.consumers.push(consumer);
    await eventually(async () => (await parkedCount(q)) === 1, 5000, 'the consumer to park');
    const at = Date.now();
    await f.queues.enqueue(q, { late: 1 }, { delay: 150 });
    await eventually(() => ran.length === 1, 4000, 'the delayed job');
    // Woken by `wake`, the next wait blocked for the old 5 s; its claim saw the job due in
    // 150 ms and cut it short, so the job ran close to its instant.
    expect(ran[0] - at).toBeGreaterThanOrEqual(145);
    expect(ran[0] - at).toBeLessThan(1500);
  });

  it('a claim that fills the consumer leaves the wake-up marker to the other consumers', async () => {
    const q = randomQueue('park');
    const started: number[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    const handler = async () => {
      started.push(Date.now());
      await held;
      return null;
    };
    for (let i = 0; i < 2; i++) {
      const { consumer } = await startConsumer(f.conn, q, handler, { concurrency: 1, prefetch: 0, maxIdleMs: 5000 });
      f.consumers.push(consumer);
    }
    await eventually(async () => (await parkedCount(q)) === 2, 5000, 'both consumers to park');
    const at = Date.now();
    await f.queues.enqueueMany(q, [{ payload: { i: 0 } }, { payload: { i: 1 } }]);
    // One consumer's claim takes one job and fills it; the marker it pushes for the rest wakes
    // the other one (were it eaten by the first consumer's own BLPOP, the second job would wait
    // for the first to end, or for the other's 5 s block).
    await eventually(() => started.length === 2, 3000, 'both jobs running at once');
    expect(Math.max(...started) - at).toBeLessThan(2000);
    release();
  });

  it('claim.lua with a registration registers only while a slot is left and the inbox is empty, else ends it and pushes an empty entry', async () => {
    const q = randomQueue('park');
    const k = queueKeys(q);
    const spot = parkSpot(k, 'cl1', 30_000);
    await f.queues.enqueueMany(q, [{ payload: { a: 1 } }, { payload: { a: 2 } }]);
    const claimOf = (n: number) => parkedClaimCall(calls.claim(k, n, 30_000, 1000), spot, 5000);
    // A claim that fills its n: no registration (an earlier one ends), and the BLPOP returns by the inbox.
    await call(f.conn.scriptClient, parkCall(k, spot, 5000));
    const full = await call(f.conn.scriptClient, claimOf(1));
    expect(full.jobs.map((j) => JSON.parse(j.payload))).toEqual([{ a: 1 }]);
    expect(await f.raw.zscore(k.parked, spot.member)).toBeNull();
    expect(await f.raw.lrange(spot.inbox, 0, -1)).toEqual(['']);
    expect(await f.raw.pttl(spot.inbox)).toBeGreaterThan(0);
    // A lease (or that entry) waiting in the inbox: no registration, nothing pushed.
    const waiting = await call(f.conn.scriptClient, claimOf(4));
    expect(waiting.jobs.map((j) => JSON.parse(j.payload))).toEqual([{ a: 2 }]);
    expect(await f.raw.zscore(k.parked, spot.member)).toBeNull();
    expect(await f.raw.lrange(spot.inbox, 0, -1)).toEqual(['']);
    // A slot left and the inbox empty: registered until now + 5 s (server clock).
    await f.raw.del(spot.inbox);
    const [sec] = (await f.raw.time()) as unknown as [string, string];
    expect(await call(f.conn.scriptClient, claimOf(4))).toEqual({ jobs: [], waitMs: -2 });
    const end = Number(await f.raw.zscore(k.parked, spot.member));
    expect(end).toBeGreaterThanOrEqual(Number(sec) * 1000 + 4000);
    expect(end).toBeLessThanOrEqual(Number(sec) * 1000 + 7000);
    expect(await f.raw.exists(spot.inbox)).toBe(0);
  });

  it('claim.lua with a registration refuses bad keys and arguments, and keys of another type, before any write', async () => {
    const q = randomQueue('park');
    const k = queueKeys(q);
    const spot = parkSpot(k, 'cl2', 30_000);
    await f.queues.enqueue(q, { a: 1 });
    const claim = parkedClaimCall(calls.claim(k, 4, 30_000, 1000), spot, 5000);
    const refused = async (c: typeof claim, code: string) => {
      await expect(call(f.conn.scriptClient, c)).rejects.toMatchObject({ code });
      expect(await f.raw.llen(k.pending)).toBe(1);
      expect(await f.raw.zcard(k.active)).toBe(0);
    };
    const other = queueKeys(randomQueue('park'));
    await refused({ ...claim, keys: [...claim.keys.slice(0, 9), other.parked, spot.inbox] }, 'EMQ_BAD_ARG');
    await refused({ ...claim, keys: [...claim.keys.slice(0, 10), k.inbox('a') + ':b'] }, 'EMQ_BAD_ARG');
    await refused({ ...claim, args: [...claim.args.slice(0, 4), '0'] }, 'EMQ_BAD_ARG');
    await refused({ ...claim, args: claim.args.slice(0, 4) }, 'EMQ_BAD_ARG');
    await f.raw.set(k.parked, 'x');
    await refused(claim, 'EMQ_WRONGTYPE');
    await f.raw.del(k.parked);
    await f.raw.set(spot.inbox, 'x');
    await refused(claim, 'EMQ_WRONGTYPE');
    await f.raw.del(spot.inbox);
    expect(await f.raw.exists(k.parked)).toBe(0);
  });

  it('a parked wait reads its pop, and its end hands back a lease an enqueue made first', async () => {
    const q = randomQueue('park');
    const k = queueKeys(q);
    const spot = parkSpot(k, 'race1', 30_000);
    const wait = new ParkedWait(f.conn, k, spot);
    const lease = (text: string): [Error | null, unknown][] => [[null, 7], [null, [-2]], [null, [spot.inbox, text]]];
    expect(wait.popped(lease('job00000000002 6 {}'), 1500)).toEqual({ jobs: [{ id: 'job00000000002', token: '6', attempt: 1, payload: '{}', extras: '', flow: '' }], waitMs: 1500 });
    // The empty entry a full claim pushed, a wake-up, a block that ran out, a failed wait: no job.
    expect(wait.popped(lease(''), -2)).toBeUndefined();
    expect(wait.popped([[null, 7], [null, [-2]], [null, [k.wake, '1']]], -2)).toBeUndefined();
    expect(wait.popped([[null, 7], [null, [-2]], [null, null]], -2)).toBeUndefined();
    expect(wait.popped([[null, 7], [null, [-2]], [new Error('UNBLOCKED'), null]], -2)).toBeUndefined();
    // Ending a current registration: removed, nothing to hand back.
    await call(f.conn.scriptClient, parkCall(k, spot, 5000));
    expect(await wait.end(f.raw)).toBeUndefined();
    expect(await f.raw.zcard(k.parked)).toBe(0);
    // Used up by an enqueue first: its lease is popped from the inbox, to be handed back.
    await call(f.conn.scriptClient, parkCall(k, spot, 5000));
    const id = await f.queues.enqueue(q, { r: 1 });
    const back = await wait.end(f.raw);
    expect(back?.jobs.map((j) => j.id)).toEqual([id]);
    expect(await f.raw.exists(spot.inbox)).toBe(0);
  });

  it('enqueue leases to the registration renewed last, so a consumer that died parked is chosen last', async () => {
    const q = randomQueue('park');
    const k = queueKeys(q);
    const dead = parkSpot(k, 'dead2', 30_000);
    const live = parkSpot(k, 'live2', 30_000);
    await call(f.conn.scriptClient, parkCall(k, dead, 4000));
    await call(f.conn.scriptClient, parkCall(k, live, 5000));
    const first = await f.queues.enqueue(q, { n: 1 });
    expect((await f.raw.lrange(live.inbox, 0, -1)).map((t) => t.slice(0, 14))).toEqual([first]);
    expect(await f.raw.llen(dead.inbox)).toBe(0);
    // Renewed again (a live consumer parks on every wait): it is chosen again.
    await f.raw.del(live.inbox);
    await call(f.conn.scriptClient, parkCall(k, live, 5000));
    const second = await f.queues.enqueue(q, { n: 2 });
    expect((await f.raw.lrange(live.inbox, 0, -1)).map((t) => t.slice(0, 14))).toEqual([second]);
    expect(await f.raw.llen(dead.inbox)).toBe(0);
  });

  it('on a queue with a stored rate limit (here: the one the consumer declared) claim.lua never registers a consumer: its jobs go through the claim', async () => {
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
