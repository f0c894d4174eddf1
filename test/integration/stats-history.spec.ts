/**
 * Issue 38: throughput and latency history kept in Valkey. Consumers count completed, failed and
 * buried jobs and histogram run and wait times per minute in memory, flush them with stats.lua
 * (one round trip) on their maintenance tick and when they stop; `QueueAdmin.metrics` reads them
 * back. The history outlives the consumer and the reader, every key has a TTL, bad arguments are
 * refused with nothing written, and planted bad data is skipped, never fatal.
 */
import { QueueAdmin } from '../../src/admin/queue-admin.js';
import { EchoMqError } from '../../src/index.js';
import { queueKeys } from '../../src/core/keys.js';
import { runScript } from '../../src/core/scripts.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, openConnection, queueKeysIn, randomQueue } from '../helpers/valkey.js';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { startEmbeddedValkey } from '../../src/core/embedded-valkey.js';

const f = queueFixture();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const statsKeys = async (q: string): Promise<string[]> => (await queueKeysIn(f.raw, q)).filter((k) => k.includes(':stats:'));
const refusal = (p: Promise<unknown>): Promise<string> => p.then(() => 'no error', (e: unknown) => (e instanceof EchoMqError ? e.code : String(e)));

describe('stored metrics (stats.lua, QueueAdmin.metrics)', () => {
  it('counts what a consumer did, with plausible latencies; the history survives the consumer and the reader; every key expires', async () => {
    const q = randomQueue('stats');
    for (let i = 0; i < 12; i++) await f.queues.enqueue(q, { n: i, fail: i >= 9 }, i >= 9 ? { attempts: 2 } : {});
    await sleep(50); // every job waits at least this long before its claim
    const { consumer, log } = await startConsumer(f.conn, q, async (job) => {
      await sleep(30);
      if ((job.payload as { fail: boolean }).fail) throw new Error('boom');
    }, { concurrency: 4 });
    const admin = new QueueAdmin(f.conn, f.queues);
    await eventually(async () => (await f.queues.counts(q)).done === 9 && (await f.queues.counts(q)).dead === 3, 10_000, 'jobs finished');
    await consumer.stop(2000); // flushes what it counted
    expect(log.warnings).toEqual([]);

    const m = await admin.metrics(q, { from: Date.now() - 10 * 60_000 });
    expect(m).toMatchObject({ queue: q, step: 60_000, resolution: 'minute', skipped: 0 });
    expect(m.points.length).toBe(11);
    expect([m.total.completed, m.total.failed, m.total.dead]).toEqual([9, 3, 3]);
    // 15 handler runs of ~30 ms each (9 completed, 3 failed and retried, 3 buried).
    expect(m.total.run.count).toBe(15);
    expect(m.total.run.p50Ms!).toBeGreaterThanOrEqual(20);
    expect(m.total.run.p50Ms!).toBeLessThan(1000);
    expect(m.total.run.meanMs!).toBeGreaterThanOrEqual(25);
    expect(m.total.run.p99Ms!).toBeGreaterThanOrEqual(m.total.run.p50Ms!);
    // Wait is measured on first attempts only: 12 jobs, each waited at least 50 ms.
    expect(m.total.wait.count).toBe(12);
    expect(m.total.wait.meanMs!).toBeGreaterThanOrEqual(40);

    // Every stats key expires: minute hashes after 25 h, hour rollups after 15 days.
    const keys = await statsKeys(q);
    expect(keys.some((k) => k.includes(':stats:m:'))).toBe(true);
    expect(keys.some((k) => k.includes(':stats:h:'))).toBe(true);
    for (const k of keys) {
      const ttl = await f.raw.ttl(k);
      if (k.includes(':stats:m:')) expect([k, ttl > 89_000 && ttl <= 90_000]).toEqual([k, true]);
      else expect([k, ttl > 1_295_000 && ttl <= 1_296_000]).toEqual([k, true]);
    }

    // A new connection and admin (another process, or the same after a restart) read the same numbers.
    const conn2 = await openConnection();
    try {
      const again = await new QueueAdmin(conn2, new QueueService(conn2)).metrics(q, { from: m.from, to: m.to });
      expect(again.total).toEqual(m.total);
      // The hourly rollup holds the same counts.
      const hourly = await new QueueAdmin(conn2, new QueueService(conn2)).metrics(q, { step: 3_600_000, from: Date.now() - 2 * 3_600_000 });
      expect([hourly.resolution, hourly.total.completed, hourly.total.failed, hourly.total.dead]).toEqual(['hour', 9, 3, 3]);
      // Across all queues the sum holds at least this queue's counts.
      const all = await new QueueAdmin(conn2, new QueueService(conn2)).metricsAll({ from: m.from, to: m.to });
      expect(all.total.completed).toBeGreaterThanOrEqual(9);
    } finally {
      await conn2.close();
    }

    // A restarted consumer adds to the stored history.
    await f.queues.enqueue(q, { n: 99, fail: false });
    const second = await startConsumer(f.conn, q, () => undefined);
    await eventually(async () => (await f.queues.counts(q)).done === 10, 5000, 'the 10th job');
    await second.consumer.stop(2000);
    expect((await admin.metrics(q, { from: m.from })).total.completed).toBe(10);
  });

  it('a running consumer flushes on its maintenance tick, at least 5 s apart, without stopping', async () => {
    const q = randomQueue('stats-tick');
    const admin = new QueueAdmin(f.conn, f.queues);
    const { consumer } = await startConsumer(f.conn, q, () => undefined, { leaseMs: 3000 }); // ticks every second
    f.consumers.push(consumer);
    for (let i = 0; i < 4; i++) await f.queues.enqueue(q, { i });
    await eventually(async () => (await f.queues.counts(q)).done === 4, 5000, 'done');
    const t0 = Date.now();
    await eventually(async () => (await admin.metrics(q)).total.completed === 4, 12_000, 'the periodic flush');
    expect(Date.now() - t0).toBeLessThan(12_000);
    const keys = await statsKeys(q); // a minute (two across a minute's end) and its hour (two across an hour's)
    expect([keys.filter((k) => k.includes(':stats:m:')).length, keys.filter((k) => k.includes(':stats:h:')).length]).toEqual([expect.any(Number), expect.any(Number)]);
    expect(keys.length).toBeGreaterThanOrEqual(2);
    expect(keys.length).toBeLessThanOrEqual(4);
  });

  it('refuses bad arguments to stats.lua with EMQ_BAD_ARG and writes nothing', async () => {
    const q = randomQueue('stats-bad');
    const k = queueKeys(q);
    const now = Math.floor(Date.now() / 1000);
    const c = f.conn.scriptClient;
    const bad: [string[], (string | number)[]][] = [
      [[k.meta], ['2', now]], // no pairs
      [[k.meta], ['2', now, 'c']], // an odd pair
      [[k.meta], ['2', now - 4 * 3600, 'c', 1]], // before the window
      [[k.meta], ['2', now + 3600, 'c', 1]], // after it
      [[k.meta], ['2', 'NaN', 'c', 1]],
      [[k.meta], ['2', now, 'x', 1]], // unknown field
      [[k.meta], ['2', now, 'r19', 1]], // past the last bucket
      [[k.meta], ['2', now, 'c', 1, 'c', 2]], // a field twice
      [[k.meta], ['2', now, 'c', 0]], // increments start at 1
      [[k.meta], ['2', now, 'c', '1.5']],
      [[k.meta], ['2', now, 'c', '1e3']],
      [[k.meta], ['2', now, 'c', 1, 'f', -1]], // a bad later pair: the good first one is not written either
      [[k.pending], ['2', now, 'c', 1]], // not a meta key
      [[k.meta, k.pending], ['2', now, 'c', 1]], // two keys
    ];
    for (const [keys, args] of bad) {
      expect([args.join(' '), await refusal(runScript(c, 'stats', keys, args))]).toEqual([args.join(' '), 'EMQ_BAD_ARG']);
    }
    expect(await refusal(runScript(c, 'stats', [k.meta], ['1', now, 'c', 1]))).toBe('EMQ_VERSION');
    expect(await queueKeysIn(f.raw, q)).toEqual([]);
    // The good call writes both hashes.
    const r = (await runScript(c, 'stats', [k.meta], ['2', now, 'c', 2, 'r3', 2, 'rs', 14])) as number[];
    expect(r).toEqual([Math.floor(now / 60), Math.floor(now / 3600)]);
    expect(await f.raw.hgetall(k.statsMinute(r[0]))).toEqual({ c: '2', r3: '2', rs: '14' });
    expect(await f.raw.hgetall(k.statsHour(r[1]))).toEqual({ c: '2', r3: '2', rs: '14' });
  });

  it('skips planted bad data: a key of another type is refused before any write; a garbage field is read as skipped and repaired by the next flush', async () => {
    const q = randomQueue('stats-planted');
    const k = queueKeys(q);
    await f.queues.enqueue(q, { n: 1 }); // the queue exists (announced)
    const now = Math.floor(Date.now() / 1000);
    const minute = Math.floor(now / 60);
    const c = f.conn.scriptClient;
    // A string where the previous minute's hash goes, and garbage in this minute's.
    await f.raw.set(k.statsMinute(minute - 1), 'not a hash');
    await f.raw.hset(k.statsMinute(minute), 'c', 'lots', 'zzz', '1', 'f', '2');
    const admin = new QueueAdmin(f.conn, f.queues);
    const m = await admin.metrics(q, { from: (minute - 5) * 60_000, to: (minute + 1) * 60_000 });
    expect(m.skipped).toBe(3); // the string key, `c: lots`, `zzz`
    expect([m.total.completed, m.total.failed]).toEqual([0, 2]);
    expect(m.points.length).toBe(6);
    // A flush into the string key is refused whole (the hour rollup is not written either).
    const hourBefore = await f.raw.hgetall(k.statsHour(Math.floor((minute - 1) / 60)));
    expect(await refusal(runScript(c, 'stats', [k.meta], ['2', (minute - 1) * 60, 'c', 1]))).toBe('EMQ_WRONGTYPE');
    expect(await f.raw.get(k.statsMinute(minute - 1))).toBe('not a hash');
    expect(await f.raw.hgetall(k.statsHour(Math.floor((minute - 1) / 60)))).toEqual(hourBefore);
    // A flush onto the garbage field overwrites it with its increment.
    await runScript(c, 'stats', [k.meta], ['2', minute * 60, 'c', 4]);
    expect(await f.raw.hget(k.statsMinute(minute), 'c')).toBe('4');
    expect(await f.raw.ttl(k.statsMinute(minute))).toBeGreaterThan(89_000);
  });

  it('refuses a bad range with EMQ_BAD_OPTION and an unknown queue with EMQ_NOT_FOUND', async () => {
    const admin = new QueueAdmin(f.conn, f.queues);
    const q = randomQueue('stats-range');
    await f.queues.enqueue(q, { n: 1 });
    const now = Date.now();
    for (const o of [{ step: 1000 }, { step: 90_000 }, { from: now, to: now - 1 }, { from: now - 2 * 86_400_000 }, { step: 3_600_000, from: now - 20 * 86_400_000 }, { from: Number.NaN }, { step: 'x' as unknown as number }, { bogus: 1 } as object]) {
      expect([o, await refusal(admin.metrics(q, o))]).toEqual([o, 'EMQ_BAD_OPTION']);
    }
    expect(await refusal(admin.metrics(randomQueue('never'), {}))).toBe('EMQ_NOT_FOUND');
    // 1 h at minute steps, 24 h at hour steps and 7 days at hour steps are fine (an empty history: zeros).
    expect((await admin.metrics(q)).points.length).toBeGreaterThanOrEqual(60);
    expect((await admin.metrics(q, { step: 3_600_000, from: now - 7 * 86_400_000 })).total.completed).toBe(0);
  });

  it('works on Valkey in cluster mode: the flush and the reads stay in the queue\'s slot (no CROSSSLOT)', async () => {
    const server = await startEmbeddedValkey({ cluster: true });
    const conn = new EchoMqConnection({ cluster: [{ host: server.host, port: server.port }] });
    try {
      await conn.open();
      const queues = new QueueService(conn);
      const q = randomQueue('stats-cluster');
      for (let i = 0; i < 5; i++) await queues.enqueue(q, { i });
      const { consumer, log } = await startConsumer(conn, q, () => undefined);
      await eventually(async () => (await queues.counts(q)).done === 5, 10_000, 'done');
      await consumer.stop(2000);
      expect(log.warnings).toEqual([]);
      const admin = new QueueAdmin(conn, queues);
      expect((await admin.metrics(q)).total.completed).toBe(5);
      expect((await admin.metricsAll({ step: 3_600_000, from: Date.now() - 3_600_000 })).total.completed).toBeGreaterThanOrEqual(5);
    } finally {
      await conn.close();
      await server.stop();
    }
  }, 60_000);
});
