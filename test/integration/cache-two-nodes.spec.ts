import type { Redis } from 'iovalkey';
import { CacheService } from '../../src/cache/cache-service.js';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { CacheKeys } from '../../src/core/keys.js';
import { eventually, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

/** Two app instances: each its own connection (with a name, to kill its subscriber) and cache. */
async function node(_name: string, ns: string, pollMs: number): Promise<{ conn: EchoMqConnection; cache: CacheService }> {
  const conn = new EchoMqConnection({ url: testUrl() });
  await conn.open();
  return { conn, cache: new CacheService(conn, { namespace: ns, pollMs }) };
}

describe('coherence across two cache instances', () => {
  let raw: Redis;
  const open: { conn: EchoMqConnection; cache: CacheService }[] = [];
  beforeAll(() => {
    raw = rawClient();
  });
  afterAll(async () => {
    for (const n of open) {
      await n.cache.close();
      await n.conn.close();
    }
    await raw.quit();
  });

  it('an update on one instance is seen on the other once its invalidation arrives', async () => {
    const ns = randomQueue('co');
    const a = await node('a', ns, 1000);
    const b = await node('b', ns, 1000);
    open.push(a, b);
    await a.cache.set('acct:alice', { cash: 100 });
    expect(await b.cache.getOrLoad('acct:alice', () => ({ cash: -1 }))).toEqual({ cash: 100 });
    expect(b.cache.stats().l2Hits).toBe(1);
    // B now serves from L1; A updates: B must see the new value, never the old one afterwards.
    await a.cache.set('acct:alice', { cash: 90 });
    await eventually(async () => JSON.stringify(await b.cache.get('acct:alice')) === '{"cash":90}', 3000, 'B sees 90');
    await a.cache.invalidate('acct:alice');
    await eventually(async () => (await b.cache.get('acct:alice')) === undefined, 3000, 'B sees the invalidation');
  });

  it('with its subscriber connection killed during the update, a node still drops the old value within the poll bound', async () => {
    const ns = randomQueue('cokill');
    const a = await node('a', ns, 300);
    const b = await node('b', ns, 300);
    open.push(a, b);
    await a.cache.set('pos:bob', { qty: 1 });
    expect(await b.cache.get('pos:bob')).toEqual({ qty: 1 });
    expect(await b.cache.get('pos:bob')).toEqual({ qty: 1 }); // an L1 hit now
    // Kill every connection but the raw client's: B's subscriber and command connections go down.
    await raw.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    await a.cache.set('pos:bob', { qty: 2 }).catch(async () => a.cache.set('pos:bob', { qty: 2 }));
    const t0 = Date.now();
    await eventually(async () => JSON.stringify(await b.cache.get('pos:bob').catch(() => null)) === '{"qty":2}', 5000, 'B catches up');
    // The documented bound on a lost signal is one poll period (plus reconnect); generous slack here.
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('drops its whole L1 of a namespace when the invalidation log was trimmed past its position', async () => {
    const ns = randomQueue('cotrim');
    const a = await node('a', ns, 60_000);
    const b = await node('b', ns, 60_000); // polls only when told (sync), so it misses what is not signalled
    open.push(a, b);
    await a.cache.set('y', 2);
    expect(await b.cache.get('y')).toBe(2);
    expect(await b.cache.get('y')).toBe(2);
    const l1Before = b.cache.stats().l1Hits;
    expect(l1Before).toBeGreaterThan(0);
    // Entries B never hears of (appended without a signal), then a trim past B's position.
    const k = new CacheKeys(ns);
    await raw.xadd(k.log, '*', 'v', a.conn.ids.next('ver'), 'k', 'other');
    await raw.xtrim(k.log, 'MAXLEN', 0);
    await raw.xadd(k.log, '*', 'v', a.conn.ids.next('ver'), 'k', 'another');
    await (b.cache as unknown as { coherence: { sync(): Promise<void> } }).coherence.sync();
    // `y` was never invalidated, yet B dropped its L1: the next read goes to L2.
    const l2Before = b.cache.stats().l2Hits;
    expect(await b.cache.get('y')).toBe(2);
    expect(b.cache.stats().l2Hits).toBe(l2Before + 1);
  });
});
