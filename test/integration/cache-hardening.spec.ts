import { Redis } from 'iovalkey';
import { CacheService } from '../../src/cache/cache-service.js';
import { cacheWire } from '../../src/cache/cache-wire.js';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { startEmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { composeId } from '../../src/core/ids.js';
import { CacheKeys } from '../../src/core/keys.js';
import { openConnection, randomQueue, rawClient } from '../helpers/valkey.js';

let raw: Redis, conn: EchoMqConnection;
const services: CacheService[] = [];
beforeAll(async () => {
  raw = rawClient();
  conn = await openConnection();
});
afterAll(async () => {
  await Promise.all(services.map((s) => s.close()));
  await Promise.all([conn.close(), raw.quit()]);
});

function fresh(extra: { l1MaxEntries?: number; tombstoneMs?: number } = {}): { cache: CacheService; k: CacheKeys; ns: string } {
  const ns = randomQueue('hard');
  const cache = new CacheService(conn, { namespace: ns, ...extra });
  services.push(cache);
  return { cache, k: new CacheKeys(ns), ns };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Members of a tag index, whatever its type. */
async function tagSize(key: string): Promise<number> {
  const type = await raw.type(key);
  if (type === 'zset') return raw.zcard(key);
  if (type === 'set') return raw.scard(key);
  return 0;
}

describe('the version rule: a write minted at or after a load began wins over its fill (issue 7 #12)', () => {
  /** Runs `fn` with Date.now frozen at `t`, so a load's millisecond is known exactly. */
  async function at<T>(t: number, fn: () => Promise<T>): Promise<T> {
    const real = Date.now;
    Date.now = () => t;
    try {
      return await fn();
    } finally {
      Date.now = real;
    }
  }

  it('a set minted on node 0 in the load\u2019s millisecond replaces the fill in L2', async () => {
    const { cache, k } = fresh();
    const t = Date.now() + 5;
    await at(t, () => cache.getOrLoad('p', () => 'loaded'));
    expect(await raw.hget(k.entry('p'), 'd')).toBe('"loaded"');
    // Another runtime on node 0 mints the first id of that same millisecond and writes.
    const ver = composeId('ver', { ms: t, node: 0, seq: 0 });
    const r = await cacheWire.set(conn.scriptClient, k, 'p', { ver, json: '"written"', ttlMs: 60_000, graceMs: 0, maxBytes: 1024, tags: [] });
    expect(r).toEqual({ written: true });
    expect(await raw.hget(k.entry('p'), 'd')).toBe('"written"');
  });

  it('an invalidation minted on node 0 in the load\u2019s millisecond writes its tombstone, in L2 and L1', async () => {
    const { cache, k } = fresh();
    const t = Date.now() + 5;
    await at(t, () => cache.getOrLoad('q', () => 'loaded'));
    const ver = composeId('ver', { ms: t, node: 0, seq: 0 });
    expect(await cacheWire.invalidate(conn.scriptClient, k, 'q', ver, 10_000)).toBe(true);
    expect(await raw.hgetall(k.entry('q'))).toEqual({ v: ver, x: '1' });
    cache.l1.applyInvalidation(k.ns, 'q', ver);
    expect(cache.l1.get(k.ns, 'q')).toBeUndefined();
  });

  it('a fill that began in the millisecond of a node-0 write is refused by it, and sorts below every id of its millisecond', async () => {
    const { cache, k } = fresh();
    await cache.invalidate('warm'); // the namespace is watched before the clock is frozen
    const t = Date.now() + 5;
    const ver = composeId('ver', { ms: t, node: 0, seq: 0 });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const load = at(t, () => cache.getOrLoad('r', async () => {
      await held;
      return 'loaded';
    }));
    await sleep(20); // the load began (its version is taken) at t
    await cacheWire.set(conn.scriptClient, k, 'r', { ver, json: '"written"', ttlMs: 60_000, graceMs: 0, maxBytes: 1024, tags: [] });
    release();
    expect(await load).toBe('loaded');
    expect(await raw.hget(k.entry('r'), 'd')).toBe('"written"');
    await at(t, () => cache.getOrLoad('s', () => 'loaded'));
    const fill = await raw.hget(k.entry('s'), 'v');
    expect(fill! < ver).toBe(true);
  });
});

describe('tag indexes are bounded and expire (issue 7 #13)', () => {
  it('after many rewrites of ~150 live entries the index stays near the live count, then expires', async () => {
    const { cache, k } = fresh({ l1MaxEntries: 0 });
    const ttlMs = 300;
    // 10 rounds of 150 keys (a count, not a time budget: a loaded machine only makes it slower),
    // each round a new generation of keys (the previous one has expired).
    for (let gen = 0; gen < 10; gen++) {
      await Promise.all(Array.from({ length: 150 }, (_, i) => cache.set(`g${gen}:k${i}`, i, { ttlMs, jitter: 0, tags: ['t'] })));
      await sleep(350);
    }
    const size = await tagSize(k.tag('t'));
    // The live round, the one before it (within the index's margin), and nothing older.
    expect(size).toBeLessThanOrEqual(300);
    expect(size).toBeGreaterThanOrEqual(150);
    const pttl = await raw.pttl(k.tag('t'));
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThan(ttlMs + 1000);
    await sleep(pttl + 50);
    expect(await raw.exists(k.tag('t'))).toBe(0);
  });
});

describe('invalidateTag is bounded per call (issue 7 #5)', () => {
  it('reads the tag in chunks of at most 1000 members, announcing each chunk', async () => {
    // A server of its own: INFO commandstats counts every client's commands, and the shared one
    // serves other specs' loops (a ZRANGE of theirs would fail this for nothing).
    const own = await startEmbeddedValkey();
    const ownConn = new EchoMqConnection({ url: own.url });
    const ownRaw = new Redis(own.url, { maxRetriesPerRequest: 1 });
    try {
      await ownConn.open();
      const ns = randomQueue('hard');
      const cache = new CacheService(ownConn, { namespace: ns, l1MaxEntries: 0 });
      const k = new CacheKeys(ns);
      const n = 3500;
      for (let i = 0; i < n; i += 500) {
        await Promise.all(Array.from({ length: 500 }, (_, j) => cache.set(`m${i + j}`, 1, { tags: ['big'] })));
      }
      const logBefore = await ownRaw.xlen(k.log);
      await ownRaw.config('RESETSTAT');
      await cache.invalidateTag('big');
      const stats = await ownRaw.info('commandstats');
      expect(stats).not.toMatch(/cmdstat_smembers:/);
      expect(stats).not.toMatch(/cmdstat_zrange:/); // no whole-index range read either
      expect((await ownRaw.xlen(k.log)) - logBefore).toBeGreaterThanOrEqual(Math.ceil(n / 1000));
      const sample = await Promise.all(['m0', 'm1777', `m${n - 1}`].map((m) => ownRaw.hget(k.entry(m), 'x')));
      expect(sample).toEqual(['1', '1', '1']);
      await cache.close();
    } finally {
      await ownConn.close().catch(() => undefined);
      ownRaw.disconnect();
      await own.stop();
    }
  });
});

describe('invalidateTag fences tagged loads in flight', () => {
  it('a tagged load that began before invalidateTag and records its tag after it writes nothing', async () => {
    const { cache, k } = fresh();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let began!: () => void;
    const started = new Promise<void>((r) => (began = r));
    const load = cache.getOrLoad('f', async () => {
      began();
      await held;
      return 'old';
    }, { tags: ['fence'] });
    await started;
    await cache.invalidateTag('fence'); // the key is not in the index yet: the mark fences it
    release();
    expect(await load).toBe('old');
    expect(await raw.exists(k.entry('f'))).toBe(0);
    expect(await raw.exists(k.tag('fence'))).toBe(0);
    await sleep(2); // a load must begin in a later millisecond than the invalidation to win over it
    expect(await cache.getOrLoad('f', () => 'new', { tags: ['fence'] })).toBe('new');
    expect(await raw.zrange(k.tag('fence'), 0, -1)).toEqual(['f']);
  });
});

describe('entry options and stats (issue 7 #16)', () => {
  it('refuses unknown entry option keys with EMQ_BAD_OPTION, writing nothing', async () => {
    const { cache, k } = fresh();
    const bad = { ttl: 5 } as never;
    await expect(cache.set('u', 1, bad)).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION' });
    await expect(cache.getOrLoad('u', () => 1, bad)).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION' });
    expect(await raw.exists(k.entry('u'))).toBe(0);
    expect(() => new CacheService(conn, { ttl: 5 } as never)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
  });

  it('counts L1 evictions by entries and by bytes', async () => {
    const ns = randomQueue('ev');
    const cache = new CacheService(conn, { namespace: ns, l1MaxEntries: 2, l1MaxBytes: 20 });
    services.push(cache);
    for (const key of ['a', 'b', 'c']) await cache.set(key, 1);
    expect(cache.stats().l1Evictions).toBe(1);
    await cache.set('d', 'x'.repeat(18)); // 20 bytes: pushes out the other two, by entries then by size
    expect(cache.stats().l1Evictions).toBe(3);
  });
});
