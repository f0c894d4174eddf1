/**
 * Issue 35 #8: under memory pressure the work still drains. With Valkey at `maxmemory` under
 * `noeviction`, enqueues are refused (EMQ_OOM) while a running consumer keeps claiming and
 * completing: the scripts that move work forward or free memory declare `allow-oom` (their
 * shebang flags), so the backlog that filled memory can shrink without an operator. Nothing
 * acknowledged is lost: every job ends done.
 */
import { Redis } from 'iovalkey';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { EchoMqError } from '../../src/core/errors.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { startConsumer } from '../helpers/consumers.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

describe('at maxmemory under noeviction', () => {
  let server: EmbeddedValkey;
  let raw: Redis;
  let conn: EchoMqConnection;
  let queues: QueueService;

  beforeAll(async () => {
    server = await startEmbeddedValkey({ args: ['--maxmemory-policy', 'noeviction'] });
    raw = new Redis({ port: server.port });
    conn = new EchoMqConnection({ port: server.port });
    await conn.open();
    queues = new QueueService(conn);
  });
  afterAll(async () => {
    await conn.close();
    raw.disconnect();
    await server.stop();
  });

  it('a running consumer drains the due jobs while enqueues are refused with EMQ_OOM; none is lost', async () => {
    const q = randomQueue('oom');
    const n = 320;
    const payload = { pad: 'p'.repeat(2000) };
    await queues.enqueueMany(q, Array.from({ length: n }, () => ({ payload })));
    // Memory full: maxmemory just above what is used, then filler until a write is refused.
    const used = Number(/used_memory:(\d+)/.exec(await raw.info('memory'))?.[1]);
    await raw.config('SET', 'maxmemory', String(used + 256 * 1024));
    // (Smaller and smaller fillers: the last byte-sized writes leave no room for an enqueue.)
    let k = 0;
    for (const size of [16 * 1024, 1024, 64]) {
      for (let i = 0; i < 1000; i++) {
        const ok = await raw.set(`filler:${q}:${k++}`, 'x'.repeat(size)).then(() => true, () => false);
        if (!ok) break;
      }
    }
    try {
      const refused = await queues.enqueue(q, payload).then(() => undefined, (e: unknown) => e);
      expect(refused).toBeInstanceOf(EchoMqError);
      expect((refused as EchoMqError).code).toBe('EMQ_OOM');

      let done = 0;
      const { consumer } = await startConsumer(conn, q, () => void done++, { concurrency: 10, keepDone: n });
      try {
        await eventually(() => done >= Math.ceil(n * 0.9), 20_000, `90% of ${n} jobs done under OOM (done ${done})`);
      } finally {
        await consumer.stop(5_000);
      }
      // Still full: producers are still refused.
      const again = await queues.enqueue(q, payload).then(() => undefined, (e: unknown) => e);
      expect((again as EchoMqError).code).toBe('EMQ_OOM');
    } finally {
      await raw.config('SET', 'maxmemory', '0');
    }
    // Nothing lost: every job is done, or still pending/active to finish later.
    const counts = await queues.counts(q);
    expect(counts.done + counts.pending + counts.active).toBe(n);
    expect(counts.done).toBeGreaterThanOrEqual(Math.ceil(n * 0.9));
  }, 60_000);
});
