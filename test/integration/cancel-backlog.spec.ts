/**
 * Cancel's cost does not grow with the backlog (issue 7 #5): cancelling the oldest of a long
 * pending list leaves a ghost id behind (no LREM); claim drops it; getJob, counts and enqueue's
 * idempotency stay correct.
 */
import { Redis } from 'iovalkey';
import { queueKeys } from '../../src/core/keys.js';
import { wire } from '../../src/core/wire/queue.js';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startEmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue } from '../helpers/valkey.js';

describe('cancel of a pending job', () => {
  const f = queueFixture();

  it('leaves a ghost that claim drops; getJob, counts and re-enqueue stay correct', async () => {
    const q = randomQueue('ghost');
    const k = queueKeys(q);
    const [a, b, c] = await f.queues.enqueueMany(q, [1, 2, 3].map((n) => ({ payload: { n } })));
    expect(await f.queues.cancel(q, a)).toBe('cancelled');
    expect(await f.queues.counts(q)).toMatchObject({ pending: 2, cancelled: 1 });
    expect(await f.queues.getJob(q, a)).toMatchObject({ status: 'cancelled', payload: { n: 1 } });
    // Re-enqueueing the cancelled id does not resurrect it.
    await f.queues.enqueue(q, { n: 9 }, { id: a });
    expect(await f.queues.getJob(q, a)).toMatchObject({ status: 'cancelled', payload: { n: 1 } });
    expect(await f.queues.counts(q)).toMatchObject({ pending: 2, cancelled: 1 });
    const claim = await wire.claim(f.conn.scriptClient, k, 3, 30_000);
    expect(claim.jobs.map((j) => j.id)).toEqual([b, c]);
    expect(await f.queues.counts(q)).toMatchObject({ pending: 0, active: 2, cancelled: 1 });
    expect(await f.queues.getJob(q, a)).toMatchObject({ status: 'cancelled', payload: { n: 1 }, attempts: 0 });
    expect(await f.queues.cancel(q, a)).toBe('finished');
  });

  it('a cancelled ghost trimmed out of the retention before claim leaves the counts honest', async () => {
    const q = randomQueue('ghosttrim');
    const k = queueKeys(q);
    const ids = await f.queues.enqueueMany(q, [1, 2, 3, 4].map((n) => ({ payload: { n } })));
    for (const id of ids.slice(0, 3)) expect(await wire.cancel(f.conn.scriptClient, k, id, 1)).toBe(1);
    expect(await f.raw.zcard(k.cancelled)).toBe(1);
    expect(await f.queues.counts(q)).toMatchObject({ pending: 1, cancelled: 1 });
    const claim = await wire.claim(f.conn.scriptClient, k, 10, 30_000);
    expect(claim.jobs.map((j) => j.id)).toEqual([ids[3]]);
    expect(await f.queues.counts(q)).toMatchObject({ pending: 0, active: 1, cancelled: 1 });
    expect(await f.raw.hget(k.meta, 'ghosts')).toBe('0');
  });

  it('cancelling the oldest of 300,000 pending jobs takes bounded server time (no scan of the list)', async () => {
    const v = await startEmbeddedValkey();
    const raw = new Redis(v.url, { maxRetriesPerRequest: 1 });
    const conn = new EchoMqConnection({ url: v.url });
    try {
      await conn.open();
      const queues = new QueueService(conn);
      const q = randomQueue('backlog');
      const k = queueKeys(q);
      const oldest = await queues.enqueue(q, { n: 0 });
      // The backlog, written in bulk; ids are minted so they sort after the oldest.
      for (let i = 0; i < 300; i++) {
        const ids = Array.from({ length: 1000 }, () => queues.mintId());
        await raw.eval(
          "for i = 1, #ARGV do redis.call('HSET', KEYS[2], ARGV[i], '{}') end redis.call('LPUSH', KEYS[1], unpack(ARGV))",
          2, k.pending, k.data, ...ids,
        );
      }
      expect(await raw.llen(k.pending)).toBe(300_001);
      await raw.config('SET', 'slowlog-log-slower-than', '0');
      await raw.slowlog('RESET');
      expect(await queues.cancel(q, oldest)).toBe('cancelled');
      const log = (await raw.slowlog('GET', 128)) as [number, number, number, string[]][];
      const call = log.find((e) => e[3][0].toLowerCase().startsWith('eval'));
      expect(call).toBeDefined();
      // Server-side µs of the cancel script: an LREM over 300k ids takes ~10 ms.
      expect(call![2]).toBeLessThan(2000);
      expect(await queues.counts(q)).toMatchObject({ pending: 300_000, cancelled: 1 });
    } finally {
      await conn.close();
      raw.disconnect();
      await v.stop();
    }
  }, 60_000);
});
