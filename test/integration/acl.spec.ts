/**
 * Issue 7 #23: EchoMQ under a least-privilege ACL user. The grants are the ones docs/operations.md
 * gives: per queue, per topic, per cache namespace. A restricted user runs the whole lifecycle
 * (enqueue → @Processor → done), is refused another queue with a typed EMQ_NOPERM, and the
 * recommended grant refuses the commands a worker must never run (FLUSHALL, FUNCTION LOAD, …).
 */
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'iovalkey';
import { BusService, CacheService, EchoMqError, EchoMqModule, Processor, QueueService, type Job } from '../../src/index.js';
import { EchoMqConnection } from '../../src/protocol.js';
import { GroupConsumer } from '../../src/unstable.js';
import { aclUser, type TestUser } from '../helpers/acl.js';
import { eventually, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

const Q = randomQueue('acl');

/** The grant the issue found working for one queue (too broad: +@write allows FLUSHALL, FUNCTION LOAD; +@connection CLIENT KILL). */
const issueGrant = (q: string) => [`~emq:{${q}}:*`, '~{emq}:*', `&emq:{${q}}:*`, '-@all', '+@read', '+@write', '+@scripting', '+@connection', '+@blocking', '+@pubsub', '+info', '+time'];
/** What every EchoMQ process needs whatever it touches (docs/operations.md, "the base grant"). */
const BASE = ['~{emq}:*', '-@all', '+@read', '+@write', '+@blocking', '+@pubsub', '-@dangerous', '-function', '+evalsha', '+eval', '+info', '+time', '+auth', '+hello', '+ping', '+quit', '+select', '+client|setname', '+client|id', '+client|unblock'];
/** The recommended grants: a queue, a topic, a cache namespace. */
const queueGrant = (q: string) => [`~emq:{${q}}:*`, `&emq:{${q}}:*`];
const topicGrant = (t: string) => [`~emq:{${t}}:bus:*`, `&emq:{${t}}:bus:*`];
const cacheGrant = (ns: string) => [`~emq:{${ns}}:cache:*`, `~emq:{c:${ns}:*`, `&emq:{${ns}}:cache:*`];

const done: string[] = [];
@Injectable()
class Orders {
  @Processor(Q, { concurrency: 2 })
  handle(job: Job<{ n: number }>): { twice: number } {
    done.push(job.id);
    return { twice: job.payload.n * 2 };
  }
}

async function code(act: () => Promise<unknown>): Promise<string> {
  return act().then(
    () => 'resolved',
    (e: unknown) => (e instanceof EchoMqError ? e.code : `untyped: ${String(e)}`),
  );
}

describe('EchoMQ as a restricted ACL user', () => {
  let raw: Redis;
  const users: TestUser[] = [];
  beforeAll(() => {
    raw = rawClient();
  });
  afterAll(async () => {
    for (const u of users) await u.drop();
    await raw.quit();
  });
  const user = async (rules: string[]): Promise<TestUser> => {
    const u = await aclUser(raw, rules, 'emq-acl');
    users.push(u);
    return u;
  };

  it.each([
    ['the issue’s grant', issueGrant(Q)],
    ['the recommended grant', [...BASE, ...queueGrant(Q)]],
  ])('runs the lifecycle under %s: enqueue → @Processor → done; another queue is refused with EMQ_NOPERM', async (_name, rules) => {
    const u = await user(rules);
    done.length = 0;
    const mod = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { url: testUrl(), username: u.username, password: u.password } })],
      providers: [Orders],
    }).compile();
    const app = mod.createNestApplication({ logger: false });
    await app.init();
    try {
      const queues = app.get(QueueService);
      const id = await queues.enqueue(Q, { n: 21 });
      await eventually(async () => (await queues.getJob(Q, id))?.status === 'done', 10_000, 'the job to be done');
      expect(await queues.getJob(Q, id)).toMatchObject({ status: 'done', result: { twice: 42 } });
      expect(done).toEqual([id]);
      const other = randomQueue('billing');
      expect(await code(() => queues.enqueue(other, { n: 1 }))).toBe('EMQ_NOPERM');
      expect(await code(() => queues.counts(other))).toBe('EMQ_NOPERM');
      // Every connection this app opened is named emq:<role>:<node>, under the restricted user too.
      const mine = String(await raw.client('LIST')).split('\n').filter((l: string) => l.includes(` user=${u.username} `));
      expect(mine.length).toBeGreaterThanOrEqual(2);
      for (const line of mine) expect(/ name=(\S*)/.exec(line)?.[1]).toMatch(/^emq:(cmd|block|sub):\d+$/);
    } finally {
      await app.close();
    }
  });

  it('the recommended grant refuses what a worker must never run, each with a typed EMQ_NOPERM', async () => {
    const u = await user([...BASE, ...queueGrant(Q)]);
    const conn = new EchoMqConnection({ url: testUrl(), username: u.username, password: u.password });
    await conn.open();
    try {
      const c = conn.client;
      const attempts: [string, () => Promise<unknown>][] = [
        ['FLUSHALL', () => c.flushall()],
        ['FLUSHDB', () => c.flushdb()],
        ['FUNCTION LOAD', () => c.call('FUNCTION', ['LOAD', "#!lua name=x\nserver.register_function('x', function() return 1 end)"])],
        ['FUNCTION FLUSH', () => c.call('FUNCTION', ['FLUSH'])],
        ['SCRIPT FLUSH', () => c.call('SCRIPT', ['FLUSH'])],
        ['CLIENT KILL', () => c.call('CLIENT', ['KILL', 'TYPE', 'pubsub'])],
        ['CONFIG SET', () => c.config('SET', 'maxmemory-policy', 'allkeys-lru')],
        ['KEYS', () => c.keys('*')],
        ['a key of another queue', () => c.get('emq:{billing}:meta')],
        ['a channel of another queue', () => c.spublish('emq:{billing}:events', 'x')],
      ];
      const codes: Record<string, string> = {};
      for (const [name, act] of attempts) codes[name] = await code(act);
      expect(codes).toEqual(Object.fromEntries(attempts.map(([name]) => [name, 'EMQ_NOPERM'])));
      // What it needs still works: after the script cache is flushed (a restart, a failover), the
      // NOSCRIPT fallback sends the script by EVAL, which the grant allows.
      await raw.call('SCRIPT', ['FLUSH']);
      const queues = new QueueService(conn);
      const id = await queues.enqueue(Q, { n: 1 });
      expect((await queues.getJob(Q, id))?.status).toBe('pending');
      expect(await queues.cancel(Q, id)).toBe('cancelled');
      // A stopping consumer unblocks its own wait (CLIENT UNBLOCK; 0: no such client blocked).
      expect(await c.client('UNBLOCK', 0)).toBe(0);
    } finally {
      await conn.close();
    }
  });

  it('a topic grant runs publish → group consumer → ack, and a cache namespace grant runs set/get/invalidate', async () => {
    const topic = randomQueue('acl-topic');
    const ns = randomQueue('acl-ns');
    const u = await user([...BASE, ...topicGrant(topic), ...cacheGrant(ns)]);
    const conn = new EchoMqConnection({ url: testUrl(), username: u.username, password: u.password });
    await conn.open();
    const bus = new BusService(conn, { trimIntervalMs: 0 });
    const cache = new CacheService(conn, { namespace: ns });
    const seen: unknown[] = [];
    const group = new GroupConsumer(conn, { topic, options: { group: 'g', from: 'start' }, handler: async (e) => void seen.push(e.payload), consumer: 'm1' });
    try {
      await group.start();
      await bus.publish(topic, { n: 1 });
      await eventually(() => seen.length === 1, 10_000, 'the event to be handled');
      expect(seen).toEqual([{ n: 1 }]);
      await cache.set('k', { v: 1 });
      expect(await cache.get('k')).toEqual({ v: 1 });
      await cache.invalidate('k');
      expect(await cache.get('k')).toBeUndefined();
      expect(await code(() => bus.publish(randomQueue('other-topic'), { n: 1 }))).toBe('EMQ_NOPERM');
      expect(await code(() => cache.get('k', { namespace: randomQueue('other-ns') }))).toBe('EMQ_NOPERM');
    } finally {
      await group.stop(1000);
      await cache.close();
      await bus.close();
      await conn.close();
    }
  });
});
