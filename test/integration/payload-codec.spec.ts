/**
 * The strict payload codec (issue 39, "no silent trap"): a payload value JSON would silently
 * change (a Date, NaN, a Map, a class instance, undefined in an array) is refused by every
 * surface that writes one — enqueue, enqueueMany, flows, schedules, Bus publish, cache set and
 * getOrLoad — naming its path and writing nothing; `codec: 'json'` accepts JSON's conversion.
 */
import 'reflect-metadata';
import type { Redis } from 'iovalkey';
import { BusService, CacheService, EchoMqModule, QueueService, type EchoMqModuleOptions } from '../../src/index.js';
import type { EchoMqConnection } from '../../src/protocol.js';
import { startApp } from '../helpers/nest.js';
import { allRefusedUnchanged } from '../helpers/refusals.js';
import { openConnection, queueKeysIn, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

let raw: Redis, conn: EchoMqConnection;
beforeAll(async () => {
  raw = rawClient();
  conn = await openConnection();
});
afterAll(async () => Promise.all([conn.close(), raw.quit()]));

const bad = { order: 'o-1', items: [{ sku: 'a' }, { sku: 'b', at: new Date(0) }] };

describe('strict by default: nothing JSON would change is written', () => {
  it('enqueue, enqueueMany, flow and schedule refuse it (EMQ_BAD_PAYLOAD, the path), writing nothing', async () => {
    const q = randomQueue('codec');
    const queues = new QueueService(conn);
    await queues.enqueue(q, { seed: 1 }); // the queue exists: a write would show as a change
    await allRefusedUnchanged(
      raw,
      'EMQ_BAD_PAYLOAD',
      [
        () => queues.enqueue(q, bad),
        () => queues.enqueueMany(q, [{ payload: { ok: 1 } }, { payload: { n: NaN } }]),
        () => queues.flow({ queue: q, payload: {}, children: [{ queue: q, payload: { m: new Map() } as never }] }),
        () => queues.schedule(q, 'nightly', { every: 60_000 }, { since: new Date(0) }),
      ],
      `emq:{${q}}:*`,
    );
    await expect(queues.enqueue(q, bad)).rejects.toThrow("payload.items[1].at: a Date becomes a string in JSON; pass date.toISOString() (or date.getTime()), or set codec: 'json'");
    await expect(queues.enqueueMany(q, [{ payload: 1 as unknown }, { payload: [undefined] as unknown }])).rejects.toThrow('[1].payload[0]: undefined in an array becomes null');
    await expect(queues.flow({ queue: q, payload: {}, children: [{ queue: q, payload: { m: new Map() } as never }] })).rejects.toThrow('children[0].payload.m: a Map becomes {}');
    expect((await queues.counts(q)).pending).toBe(1);
    await raw.del(...(await queueKeysIn(raw, q)));
  });

  it('Bus publish and cache set / getOrLoad refuse it too, writing nothing', async () => {
    const topic = randomQueue('codec-topic');
    const ns = randomQueue('codec-ns');
    const bus = new BusService(conn, { trimIntervalMs: 0 });
    const cache = new CacheService(conn, { namespace: ns });
    try {
      await allRefusedUnchanged(
        raw,
        'EMQ_BAD_PAYLOAD',
        [() => bus.publish(topic, bad), () => bus.publishMany(topic, [{}, { s: new Set([1]) }]), () => cache.set('k', bad as never), () => cache.getOrLoad('w', async () => ({ at: new Date(0) }) as never)],
        [`emq:{${topic}}:*`, `emq:{${ns}}:*`, `emq:{c:${ns}:*`],
      );
      await expect(bus.publishMany(topic, [{}, { s: new Set([1]) }])).rejects.toThrow('[1].s: a Set becomes {}');
      await expect(cache.set('k', { at: new Date(0) } as never)).rejects.toThrow('value.at: a Date becomes a string');
    } finally {
      await cache.close();
      await bus.close();
    }
  });
});

describe("codec: 'json' accepts JSON's conversion", () => {
  it('per queue (defaults, queues[name]), for the Bus and the cache, through the module', async () => {
    const q = randomQueue('codec-json');
    const strictQ = randomQueue('codec-strict');
    const topic = randomQueue('codec-json-topic');
    const ns = randomQueue('codec-json-ns');
    const app = await startApp([
      EchoMqModule.forRoot({
        connection: { url: testUrl() },
        consumers: false,
        defaults: { codec: 'json' },
        queues: { [strictQ]: { codec: 'strict' } },
        bus: { codec: 'json', trimIntervalMs: 0 },
        cache: { codec: 'json', namespace: ns },
      }),
    ]);
    try {
      const queues = app.get(QueueService);
      const id = await queues.enqueue(q, bad);
      expect((await queues.getJob(q, id))?.payload).toEqual({ order: 'o-1', items: [{ sku: 'a' }, { sku: 'b', at: '1970-01-01T00:00:00.000Z' }] });
      await expect(queues.enqueue(strictQ, bad)).rejects.toMatchObject({ code: 'EMQ_BAD_PAYLOAD' });
      expect(await app.get(BusService).publish(topic, { at: new Date(0) })).toMatch(/^evt/);
      const cache = app.get(CacheService);
      await cache.set('k', { n: NaN } as never);
      expect(await cache.get('k')).toEqual({ n: null });
    } finally {
      await app.close();
      for (const pattern of [`emq:{${q}}:*`, `emq:{${topic}}:*`, `emq:{${ns}}:*`, `emq:{c:${ns}:*`]) {
        const keys = await raw.keys(pattern);
        if (keys.length) await raw.del(...keys);
      }
    }
  });

  it('a codec other than strict or json is refused at bootstrap, naming its path', () => {
    const forRoot = (o: unknown) => () => EchoMqModule.forRoot({ connection: { url: testUrl() }, ...(o as EchoMqModuleOptions) });
    expect(forRoot({ queues: { orders: { codec: 'lenient' } } })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: 'queues.orders.codec must be "strict" or "json", got "lenient"' }));
    expect(forRoot({ bus: { codec: 'loose' } })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('codec') }));
    expect(forRoot({ cache: { codec: 1 } })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('cache codec') }));
  });
});
