/**
 * Concurrent single enqueues (and publishes) to one queue (topic) share script calls: fewer round
 * trips, with every job stored once, in submission order, and each call still atomic.
 */
import { Redis } from 'iovalkey';
import { BusService, QueueService } from '../../src/index.js';
import { EchoMqConnection, queueKeys } from '../../src/protocol.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/testing.js';
import { randomQueue } from '../helpers/valkey.js';

let server: EmbeddedValkey, raw: Redis, conn: EchoMqConnection;
beforeAll(async () => {
  server = await startEmbeddedValkey();
  raw = new Redis(server.url, { maxRetriesPerRequest: 1 });
  conn = new EchoMqConnection({ url: server.url });
  await conn.open();
}, 30_000);
afterAll(async () => {
  await conn.close();
  await raw.quit();
  await server.stop();
});

/** Script calls the server ran since the last reset (EVALSHA and EVAL). */
async function scriptCalls(): Promise<number> {
  const info = await raw.info('commandstats');
  let n = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) n += Number(m[1]);
  return n;
}

describe('enqueue coalescing', () => {
  it('300 concurrent enqueues to one queue take a handful of script calls, and every job is stored in order', async () => {
    const queues = new QueueService(conn);
    const q = randomQueue('coal');
    await queues.enqueue(q, { warm: true }); // scripts loaded, lease certain
    await raw.config('RESETSTAT');
    const ids = await Promise.all(Array.from({ length: 300 }, (_, i) => queues.enqueue(q, { i })));
    const calls = await scriptCalls();
    expect(new Set(ids).size).toBe(300);
    expect(calls).toBeLessThanOrEqual(10);
    const k = queueKeys(q);
    // pending is LPUSHed: the oldest is at the tail, so reversed it is submission order.
    const pending = (await raw.lrange(k.pending, 0, -1)).reverse();
    expect(pending).toEqual([expect.any(String), ...ids]);
    const payloads = await raw.hmget(k.data, ...ids);
    expect(payloads.map((p) => JSON.parse(p as string).i)).toEqual(Array.from({ length: 300 }, (_, i) => i));
  });

  it('an enqueueMany merged with others stays whole and in order; one caller-given id twice is one job', async () => {
    const queues = new QueueService(conn);
    const q = randomQueue('coal');
    const id = queues.mintId();
    const [a, many, b] = await Promise.all([
      queues.enqueue(q, { a: 1 }, { id }),
      queues.enqueueMany(q, [{ payload: { m: 1 } }, { payload: { m: 2 } }, { payload: { m: 3 } }]),
      queues.enqueue(q, { a: 2 }, { id }),
    ]);
    expect([a, b]).toEqual([id, id]);
    expect(many).toHaveLength(3);
    const k = queueKeys(q);
    expect((await raw.lrange(k.pending, 0, -1)).reverse()).toEqual([id, ...many]);
    expect(JSON.parse((await raw.hget(k.data, id)) as string)).toEqual({ a: 1 });
  });

  it('a bad item fails its own caller only: the others resolve', async () => {
    const queues = new QueueService(conn, undefined, { small: { maxPayloadBytes: 64 } });
    const q = 'small';
    const got = await Promise.allSettled([queues.enqueue(q, { ok: 1 }), queues.enqueue(q, { pad: 'x'.repeat(100) }), queues.enqueue(q, { ok: 2 })]);
    expect(got.map((g) => g.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((got[1] as PromiseRejectedResult).reason.code).toBe('EMQ_PAYLOAD_TOO_LARGE');
    expect(await raw.hlen(queueKeys(q).data)).toBe(2);
    await raw.del(...Object.values(queueKeys(q)).filter((v): v is string => typeof v === 'string'));
  });
});

describe('publish coalescing', () => {
  it('300 concurrent publishes to one topic take a handful of script calls; the log holds them in order', async () => {
    const bus = new BusService(conn, { trimIntervalMs: 0 });
    const topic = randomQueue('coal-topic');
    await bus.publish(topic, { warm: true });
    await raw.config('RESETSTAT');
    const ids = await Promise.all(Array.from({ length: 300 }, (_, i) => bus.publish(topic, { i })));
    expect(await scriptCalls()).toBeLessThanOrEqual(10);
    expect([...ids].sort()).toEqual(ids); // ids in mint order = submission order
    const seen: number[] = [];
    for await (const e of bus.replay<{ i?: number }>(topic)) if (e.payload.i !== undefined) seen.push(e.payload.i);
    expect(seen).toEqual(Array.from({ length: 300 }, (_, i) => i));
    await bus.onModuleDestroy();
  });
});
