import 'reflect-metadata';
import { Controller, Get, Injectable, Param, UseInterceptors, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'iovalkey';
import { BusService, CacheEvict, CacheInterceptor, CacheScope, CacheService, EchoMqModule, type BusEvent } from '../../src/index.js';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { CacheFollowOrchestrator } from '../../src/nest/cache-follow-orchestrator.js';
import { eventually, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

// Issue 14: one invalidation reaches every cached copy — HTTP pages carry tags, and a Bus topic
// invalidates them on every instance.
const NS = randomQueue('shop');
const TOPIC = randomQueue('products');
/** The origin: what a database would hold (shared by both instances, as one database would be). */
const db = new Map<string, number>();
let renders = 0;
let mapped = 0;

@Controller('products')
@UseInterceptors(CacheInterceptor)
class ProductPages {
  @Get(':id')
  @CacheScope('public', { ttlMs: 60_000, tags: (req) => [`product:${req.params?.id ?? ''}`] })
  page(@Param('id') id: string): { id: string; price: number | null; render: number } {
    return { id, price: db.get(id) ?? null, render: ++renders };
  }
}

@Injectable()
class Catalog {
  @CacheEvict({ tags: (id: string) => [`product:${id}`] })
  async setPrice(id: string, price: number): Promise<void> {
    db.set(id, price);
  }
}

interface Instance {
  readonly app: INestApplication;
  readonly base: string;
}

async function instance(): Promise<Instance> {
  const mod = await Test.createTestingModule({
    imports: [
      EchoMqModule.forRoot({
        connection: { url: testUrl() },
        cache: {
          namespace: NS,
          pollMs: 300,
          invalidateOn: [
            {
              topic: TOPIC,
              ackTimeoutMs: 1000,
              maxDeliveries: 2,
              tags: (e: BusEvent<{ id: string }>) => {
                mapped++;
                return [`product:${e.payload.id}`];
              },
            },
          ],
        },
      }),
    ],
    controllers: [ProductPages],
    providers: [Catalog],
  }).compile();
  const app = mod.createNestApplication({ logger: false });
  await app.listen(0, '127.0.0.1');
  return { app, base: await app.getUrl() };
}

async function page(i: Instance, id: string): Promise<{ price: number | null; render: number; cache: string | null }> {
  const r = await fetch(`${i.base}/products/${id}`);
  expect(r.status).toBe(200);
  const body = (await r.json()) as { price: number | null; render: number };
  return { ...body, cache: r.headers.get('x-cache') };
}

/** Both instances hold `id` in L1: a second read on each is a HIT of the current price. */
async function cachedOnBoth(a: Instance, b: Instance, id: string, price: number): Promise<void> {
  await page(a, id);
  await page(b, id);
  for (const i of [a, b]) {
    const p = await page(i, id);
    expect([p.cache, p.price]).toEqual(['HIT', price]);
  }
}

/** Every instance serves `price` for `id` within `ms` — and never the old price again. */
async function refreshedOnBoth(instances: Instance[], id: string, price: number, ms = 5000): Promise<void> {
  for (const i of instances) await eventually(async () => (await page(i, id)).price === price, ms, `the page of ${id} shows ${price}`);
  for (const i of instances) expect((await page(i, id)).price).toBe(price);
}

describe('one invalidation reaches every cached copy (two app instances)', () => {
  let a: Instance;
  let b: Instance;
  let raw: Redis;
  let producer: EchoMqConnection;
  let bus: BusService;

  beforeAll(async () => {
    a = await instance();
    b = await instance();
    raw = rawClient();
    // A third, plain producer: its own connection and Bus, no cache, no Nest.
    producer = new EchoMqConnection({ url: testUrl() });
    await producer.open();
    bus = new BusService(producer, { trimIntervalMs: 0 });
  }, 30_000);
  afterAll(async () => {
    await a.app.close();
    await b.app.close();
    await bus.close();
    await producer.close();
    await raw.quit();
  }, 30_000);

  it('@CacheEvict with the product tag refreshes the product page on both instances', async () => {
    db.set('1', 10);
    await cachedOnBoth(a, b, '1', 10);
    await a.app.get(Catalog).setPrice('1', 11);
    await refreshedOnBoth([a, b], '1', 11, 3000);
    // The page entry lives in the cache's namespace, tagged: CacheService.invalidateTag reaches it too.
    await cachedOnBoth(a, b, '1', 11);
    db.set('1', 12);
    await b.app.get(CacheService).invalidateTag('product:1');
    await refreshedOnBoth([a, b], '1', 12, 3000);
  });

  it('a products event published on the Bus by a plain producer refreshes both, each event mapped once per namespace', async () => {
    db.set('2', 20);
    await cachedOnBoth(a, b, '2', 20);
    const before = mapped;
    db.set('2', 21);
    await bus.publish(TOPIC, { id: '2' });
    await refreshedOnBoth([a, b], '2', 21);
    // Ten more events for other products: the shared group runs each once, not once per instance.
    await bus.publishMany(TOPIC, Array.from({ length: 10 }, (_, n) => ({ id: `x${n}` })));
    await eventually(() => mapped === before + 11, 5000, 'all 11 events mapped');
    await new Promise((r) => setTimeout(r, 500));
    expect(mapped).toBe(before + 11);
  });

  it('an event published while every follower was stopped is caught up when one restarts', async () => {
    db.set('3', 30);
    await cachedOnBoth(a, b, '3', 30);
    const followers = [a, b].map((i) => i.app.get(CacheFollowOrchestrator));
    for (const f of followers) await f.beforeApplicationShutdown();
    db.set('3', 31);
    await bus.publish(TOPIC, { id: '3' });
    await new Promise((r) => setTimeout(r, 700));
    // Nobody followed the topic: both still serve their cached copy (nothing else invalidated it).
    for (const i of [a, b]) expect(await page(i, '3')).toMatchObject({ cache: 'HIT', price: 30 });
    await followers[1].onApplicationBootstrap();
    // (An event that reached a member's last blocking read as it stopped waits for the reclaim.)
    await refreshedOnBoth([a, b], '3', 31, 15_000);
    await followers[0].onApplicationBootstrap();
  }, 30_000);

  it("with the followers' connections killed during the event, both instances still catch up", async () => {
    db.set('4', 40);
    await cachedOnBoth(a, b, '4', 40);
    db.set('4', 41);
    // Kill every client connection but the raw client's (the group readers, subscribers, commands);
    // the producer publishes at once, while the instances reconnect.
    await raw.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    await bus.publish(TOPIC, { id: '4' }).catch(async () => bus.publish(TOPIC, { id: '4' }));
    await refreshedOnBoth([a, b], '4', 41, 15_000);
  }, 30_000);

  it('an event whose mapping returns a bad tag is retried, then dead-lettered; later events still apply', async () => {
    db.set('5', 50);
    await cachedOnBoth(a, b, '5', 50);
    db.set('5', 51);
    await bus.publish(TOPIC, { id: 'bad id with spaces' });
    await bus.publish(TOPIC, { id: '5' });
    await refreshedOnBoth([a, b], '5', 51);
    await eventually(async () => (await bus.deadLetters(TOPIC)).some((d) => d.group === `cache.${NS}`), 15_000, 'the bad event is dead-lettered');
  }, 30_000);
});
