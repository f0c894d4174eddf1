/**
 * `EventLogReader` (the fleet side of `@OnQueueEvent`) without Nest: a sink that throws leaves
 * its entry pending and it is delivered again (at least once); two groups each see every event;
 * members of one group split them; kinds nobody asked for are acknowledged unread.
 */
import type { Redis } from 'iovalkey';
import { EchoMqConnection } from '../../src/protocol.js';
import { EventLogReader, type EventLogReaderOptions } from '../../src/unstable.js';
import type { QueueEventDetail } from '../../src/index.js';
import { BUILTIN_DEFAULTS, resolveDefaults } from '../../src/queue/queue-options.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startConsumer } from '../helpers/consumers.js';
import { eventually, openConnection, queueKeysIn, randomQueue, rawClient } from '../helpers/valkey.js';

let raw: Redis;
let conn: EchoMqConnection;
let queues: QueueService;
const made: string[] = [];
beforeAll(async () => {
  raw = rawClient();
  conn = await openConnection();
  queues = new QueueService(conn, resolveDefaults(BUILTIN_DEFAULTS, { eventsLog: 1000 }));
});
afterAll(async () => {
  for (const q of made) {
    const keys = await queueKeysIn(raw, q);
    if (keys.length) await raw.del(...keys);
  }
  await conn.close();
  await raw.quit();
});

const reader = (o: Omit<EventLogReaderOptions, 'consumer'> & { consumer?: string }): EventLogReader => new EventLogReader(conn, { consumer: 'c1', ...o });

describe('EventLogReader', () => {
  it('a sink that throws leaves the entry pending; it is taken over and delivered again', async () => {
    const q = randomQueue('elr-retry');
    made.push(q);
    const seen: QueueEventDetail[] = [];
    let thrown = 0;
    const r = reader({
      queue: q,
      group: 'audit',
      kinds: ['completed'],
      reclaimIdleMs: 300,
      sink: (e) => {
        if (thrown++ === 0) throw new Error('the audit store is down');
        seen.push(e);
      },
    });
    await r.open();
    r.start();
    const { consumer } = await startConsumer(conn, q, (job) => ({ ok: job.id }));
    try {
      const id = await queues.enqueue(q, { a: 1 }, { name: 'audited' });
      await eventually(() => seen.length === 1, 5000, 'delivered again after the throw');
      expect(thrown).toBe(2);
      expect(seen[0]).toMatchObject({ id, kind: 'completed', result: { ok: id }, name: 'audited', scope: 'fleet' });
      await eventually(async () => ((await raw.call('XPENDING', `emq:{${q}}:events`, 'audit')) as unknown[])[0] === 0, 3000, 'acknowledged');
    } finally {
      await consumer.stop(1000);
      await r.stop();
    }
  });

  it('two groups each see every event; two members of one group split them, each event once', async () => {
    const q = randomQueue('elr-groups');
    made.push(q);
    const a: string[] = [];
    const b1: string[] = [];
    const b2: string[] = [];
    const readers = [
      reader({ queue: q, group: 'a', kinds: ['enqueued'], sink: (e) => void a.push(e.id) }),
      reader({ queue: q, group: 'b', consumer: 'm1', kinds: ['enqueued'], sink: (e) => void b1.push(e.id) }),
      reader({ queue: q, group: 'b', consumer: 'm2', kinds: ['enqueued'], sink: (e) => void b2.push(e.id) }),
    ];
    for (const r of readers) await r.open();
    for (const r of readers) r.start();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) ids.push(await queues.enqueue(q, { i })); // one log entry each
      await eventually(() => a.length === 20 && b1.length + b2.length === 20, 5000, 'all delivered');
      expect([...a].sort()).toEqual([...ids].sort());
      expect([...b1, ...b2].sort()).toEqual([...ids].sort());
    } finally {
      await Promise.all(readers.map((r) => r.stop()));
    }
  });

  it('stop waits for a handler at most its deadline; the entry stays pending for a takeover', async () => {
    const q = randomQueue('elr-stop');
    made.push(q);
    let called = 0;
    const r = reader({ queue: q, group: 'slow', kinds: ['enqueued'], sink: () => new Promise<void>(() => void called++) });
    await r.open();
    r.start();
    await queues.enqueue(q, { a: 1 });
    await eventually(() => called === 1, 3000, 'the handler to start');
    const t0 = Date.now();
    await r.stop(200);
    expect(Date.now() - t0).toBeLessThan(1500);
    expect(((await raw.call('XPENDING', `emq:{${q}}:events`, 'slow')) as unknown[])[0]).toBe(1);
  });
});
