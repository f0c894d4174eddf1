import type { Redis } from 'iovalkey';
import { BusAdmin, BusService, CacheAdmin, CacheService } from '../../src/index.js';
import { eventIdOf, globalKeys, runScript, topicKeys, type EchoMqConnection } from '../../src/protocol.js';
import { codeOf, refusedUnchanged } from '../helpers/refusals.js';
import { eventually, openConnection, randomQueue, rawClient } from '../helpers/valkey.js';
import { PROTOCOL_VERSION } from '../../src/core/scripts.js';

let raw: Redis, conn: EchoMqConnection, bus: BusService, cache: CacheService, busAdmin: BusAdmin, cacheAdmin: CacheAdmin;
beforeAll(async () => {
  raw = rawClient();
  conn = await openConnection();
  bus = new BusService(conn, { trimIntervalMs: 0 });
  cache = new CacheService(conn);
  busAdmin = new BusAdmin(conn, bus);
  cacheAdmin = new CacheAdmin(conn, cache);
});
afterAll(async () => {
  await Promise.all([bus.close(), cache.close()]);
  await Promise.all([conn.close(), raw.quit()]);
});

/** A topic with 3 events, a group `g` that read 2 of them and dead-lettered both. */
async function withDeadLetters(): Promise<{ t: string; events: string[] }> {
  const t = randomQueue('topic');
  const k = topicKeys(t);
  const events = await bus.publishMany(t, [{ n: 1 }, { n: 2 }, { n: 3 }]);
  await raw.xgroup('CREATE', k.log, 'g', '0');
  const read = (await raw.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 2, 'STREAMS', k.log, '>')) as [string, [string, string[]][]][];
  for (const [sid] of read[0][1]) await runScript(conn.scriptClient, 'dead-letter', [k.meta, k.log, k.dead], [PROTOCOL_VERSION, 'g', 'c1', sid, eventIdOf(sid), 'Error: bad', '0', '1000']);
  return { t, events };
}

describe('Bus admin', () => {
  it('topics (announced at publish), groups with pending and lag, dead letters newest first', async () => {
    const { t, events } = await withDeadLetters();
    await eventually(async () => (await raw.zscore(globalKeys.topics, t)) !== null, 5000, 'announced');
    expect(await busAdmin.topic(t)).toEqual({ name: t, length: 3, lastEventId: events[2], groups: 1, deadLetters: 2, logBytes: expect.any(Number), archiveSegments: 0 });
    const all = await busAdmin.topics({ after: t.slice(0, -1), limit: 5 });
    expect(all.items.find((i) => i.name === t)).toMatchObject({ length: 3 });
    expect(await busAdmin.groups(t)).toEqual([{ name: 'g', consumers: 1, pending: 0, lag: 1, lastDeliveredId: events[1] }]);
    const dead = await busAdmin.deadLetters(t);
    expect(dead.map((d) => [d.id, d.group, d.error, d.payload])).toEqual([
      [events[1], 'g', 'Error: bad', { n: 2 }],
      [events[0], 'g', 'Error: bad', { n: 1 }],
    ]);
  });

  it('replays dead letters to the topic (one by id, then all) and purges them', async () => {
    const { t } = await withDeadLetters();
    const k = topicKeys(t);
    const [, oldest] = await busAdmin.deadLetters(t);
    expect(await busAdmin.replayDead(t, { ids: [oldest.deadId] })).toEqual({ count: 1, more: false });
    expect([await raw.xlen(k.log), await raw.xlen(k.dead)]).toEqual([4, 1]);
    const last = (await raw.xrevrange(k.log, '+', '-', 'COUNT', 1))[0];
    expect(last[1]).toEqual(['p', JSON.stringify({ n: 1 })]);
    expect(await busAdmin.replayDead(t, { ids: [oldest.deadId] })).toEqual({ count: 0, more: false }); // gone already
    expect(await busAdmin.replayDead(t, { limit: 1 })).toEqual({ count: 1, more: false });
    expect((await busAdmin.deadLetters(t)).length).toBe(0);
    const again = await withDeadLetters();
    expect(await busAdmin.purgeDead(again.t, { limit: 1 })).toEqual({ count: 1, more: true });
    expect(await busAdmin.purgeDead(again.t)).toEqual({ count: 1, more: false });
    expect([await raw.xlen(topicKeys(again.t).log), await raw.xlen(topicKeys(again.t).dead)]).toEqual([3, 0]);
  });

  it('reads and replaces the retention policy', async () => {
    const { t } = await withDeadLetters();
    expect(await busAdmin.retention(t)).toEqual({});
    await busAdmin.setRetention(t, { maxLen: 1000, maxAgeMs: 86_400_000 });
    expect(await busAdmin.retention(t)).toEqual({ maxLen: 1000, maxAgeMs: 86_400_000, archiveMaxAgeMs: 604_800_000, archiveMaxBytes: 67_108_864 });
  });

  it('bad input: unknown topic (EMQ_NOT_FOUND), bad name, bad dead ids and limits; nothing written', async () => {
    const unknown = randomQueue('no-topic');
    for (const act of [() => busAdmin.topic(unknown), () => busAdmin.groups(unknown), () => busAdmin.deadLetters(unknown), () => busAdmin.replayDead(unknown), () => busAdmin.purgeDead(unknown), () => busAdmin.retention(unknown), () => busAdmin.setRetention(unknown, { maxLen: 5 })]) {
      expect(await codeOf(act)).toBe('EMQ_NOT_FOUND');
    }
    expect(await raw.keys(`emq:{${unknown}}:*`)).toEqual([]);
    expect(await codeOf(() => busAdmin.groups('a{b'))).toBe('EMQ_BAD_NAME');
    const { t } = await withDeadLetters();
    const pattern = `emq:{${t}}:*`;
    await refusedUnchanged(raw, t, 'EMQ_BAD_OPTION', () => busAdmin.replayDead(t, { ids: ['evt123'] }), pattern);
    await refusedUnchanged(raw, t, 'EMQ_BAD_OPTION', () => busAdmin.purgeDead(t, { ids: ['1-1', '1-x'] }), pattern);
    await refusedUnchanged(raw, t, 'EMQ_BAD_OPTION', () => busAdmin.purgeDead(t, { limit: 0 }), pattern);
    await refusedUnchanged(raw, t, 'EMQ_BAD_OPTION', () => busAdmin.deadLetters(t, { count: 1001 }), pattern);
    await refusedUnchanged(raw, t, 'EMQ_BAD_OPTION', () => busAdmin.setRetention(t, { maxLen: -1 }), pattern);
  });
});

describe('Cache admin', () => {
  it('namespaces (announced at first use) with their invalidations; invalidate a key and a tag', async () => {
    const ns = randomQueue('ns');
    await cache.set('user:1', { name: 'a' }, { namespace: ns, tags: ['users'] });
    await cache.set('user:2', { name: 'b' }, { namespace: ns, tags: ['users'] });
    await cache.set('other', 1, { namespace: ns });
    await eventually(async () => (await raw.zscore(globalKeys.caches, ns)) !== null, 5000, 'announced');
    await cacheAdmin.invalidate(ns, 'user:1');
    expect(await cache.get('user:1', { namespace: ns })).toBeUndefined();
    await cacheAdmin.invalidateTag(ns, 'users');
    expect(await cache.get('user:2', { namespace: ns })).toBeUndefined();
    expect(await cache.get('other', { namespace: ns })).toBe(1);
    const info = await cacheAdmin.namespace(ns);
    expect(info).toMatchObject({ name: ns, lastInvalidationAt: expect.any(Date) });
    expect(info.invalidations).toBeGreaterThanOrEqual(5); // 3 sets + 1 invalidate + 1 tag chunk announced
    const stats = await cacheAdmin.stats({ after: ns.slice(0, -1), limit: 5 });
    expect(stats.items.find((i) => i.name === ns)).toEqual(info);
    expect(stats.process.invalidations).toBeGreaterThanOrEqual(2);
  });

  it('bad input: unknown namespace (EMQ_NOT_FOUND), bad key or tag (EMQ_BAD_NAME); nothing written', async () => {
    const unknown = randomQueue('no-ns');
    for (const act of [() => cacheAdmin.namespace(unknown), () => cacheAdmin.invalidate(unknown, 'k'), () => cacheAdmin.invalidateTag(unknown, 't')]) {
      expect(await codeOf(act)).toBe('EMQ_NOT_FOUND');
    }
    expect(await raw.keys(`emq:{*${unknown}*}:*`)).toEqual([]);
    const ns = randomQueue('ns-bad');
    await cache.set('k', 1, { namespace: ns });
    for (const act of [() => cacheAdmin.invalidate(ns, 'a b'), () => cacheAdmin.invalidateTag(ns, '{t}'), () => cacheAdmin.invalidate('a:b', 'k')]) {
      await refusedUnchanged(raw, ns, 'EMQ_BAD_NAME', act, [`emq:{${ns}}:*`, `emq:{c:${ns}:*`]);
    }
  });
});

describe('in Nest', () => {
  it('EchoMqModule provides QueueAdmin, BusAdmin and CacheAdmin over its connection', async () => {
    const { EchoMqModule, QueueAdmin, QueueService: Queues } = await import('../../src/index.js');
    const { startApp } = await import('../helpers/nest.js');
    const { testUrl } = await import('../helpers/valkey.js');
    const app = await startApp([EchoMqModule.forRoot({ connection: { url: testUrl() } })]);
    try {
      const q = randomQueue('nest-admin');
      await app.get(Queues).enqueue(q, { a: 1 });
      const admin = app.get(QueueAdmin);
      expect([await admin.pause(q), (await admin.info(q)).paused]).toEqual([true, true]);
      expect(app.get(BusAdmin)).toBeInstanceOf(BusAdmin);
      expect(app.get(CacheAdmin)).toBeInstanceOf(CacheAdmin);
    } finally {
      await app.close();
    }
  });
});
