import type { Redis } from 'iovalkey';
import { CacheService } from '../../src/cache/cache-service.js';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { CacheKeys } from '../../src/core/keys.js';
import { eventually, openConnection, randomQueue, rawClient } from '../helpers/valkey.js';

let raw: Redis, connA: EchoMqConnection, connB: EchoMqConnection;
const services: CacheService[] = [];
beforeAll(async () => {
  raw = rawClient();
  [connA, connB] = await Promise.all([openConnection(), openConnection()]);
});
afterAll(async () => {
  await Promise.all(services.map((s) => s.close()));
  await Promise.all([connA.close(), connB.close(), raw.quit()]);
});

/** A fresh namespace, with one cache service per connection on it. */
function pair(extra: { l1MaxEntries?: number } = {}): { ns: string; a: CacheService; b: CacheService; k: CacheKeys } {
  const ns = randomQueue('ns');
  const a = new CacheService(connA, { namespace: ns, ...extra });
  const b = new CacheService(connB, { namespace: ns, ...extra });
  services.push(a, b);
  return { ns, a, b, k: new CacheKeys(ns) };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** A promise and its resolver, to hold a loader until the test lets it go. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

describe('the stale-set race', () => {
  it('a loader that read v1 before a set of v2 and an invalidation writes v1 nowhere', async () => {
    const { a, b, k } = pair();
    let db = 'v1';
    const g = gate();
    let started!: () => void;
    const loaderStarted = new Promise<void>((r) => (started = r));
    const slow = a.getOrLoad('user:1', async () => {
      const read = db; // reads v1 (its version was minted before this)
      started();
      await g.wait;
      return read;
    });
    await loaderStarted;
    db = 'v2';
    await a.set('user:1', db);
    expect(await a.get('user:1')).toBe('v2');
    await a.invalidate('user:1');
    g.open();
    expect(await slow).toBe('v1'); // the caller gets what its loader returned …
    const entry = await raw.hgetall(k.entry('user:1'));
    expect(entry).toEqual({ v: expect.stringMatching(/^ver[0-9A-Za-z]{11}$/), x: '1' }); // … L2 keeps the tombstone
    expect(await a.get('user:1')).toBeUndefined(); // … L1 has nothing
    expect(await b.get('user:1')).toBeUndefined(); // … nor does another node
    expect(await a.getOrLoad('user:1', () => db)).toBe('v2');
    expect(await b.get('user:1')).toBe('v2');
  });

  it('a loader older than a set is refused: the newer mint wins in L2 and L1', async () => {
    const { a, b, k } = pair();
    const g = gate();
    const began = gate();
    const slow = a.getOrLoad('p', async () => {
      began.open(); // the load's version was minted before the loader was called
      await g.wait;
      return 'old';
    });
    await began.wait;
    await b.set('p', 'new');
    g.open();
    expect(await slow).toBe('old');
    expect(await raw.hget(k.entry('p'), 'd')).toBe('"new"');
    expect(await a.get('p')).toBe('new');
    expect(await b.get('p')).toBe('new');
  });
});

describe('set, get, TTL, grace, negative caching', () => {
  it('set then get in another node; the entry has v, d, t and a TTL of ttl·(1 + jitter) + grace', async () => {
    const { a, b, k } = pair();
    await a.set('x', { n: 1, s: ['é'] }, { ttlMs: 10_000, jitter: 0.1, graceMs: 5000, tags: ['t1', 't2'] });
    expect(await b.get('x')).toEqual({ n: 1, s: ['é'] });
    const h = await raw.hgetall(k.entry('x'));
    expect(h).toEqual({ v: expect.stringMatching(/^ver/), d: '{"n":1,"s":["é"]}', t: 't1 t2', g: '5000' });
    const pttl = await raw.pttl(k.entry('x'));
    expect(pttl).toBeGreaterThan(14_000);
    expect(pttl).toBeLessThanOrEqual(16_000);
    // The tag index: key -> its expiry (server clock), living as long as its last member.
    const [member, score] = await raw.zrange(k.tag('t1'), 0, -1, 'WITHSCORES');
    expect(member).toBe('x');
    const [sec] = await raw.time();
    expect(Number(score) - Number(sec) * 1000).toBeGreaterThan(14_000);
    expect(await raw.pttl(k.tag('t1'))).toBeGreaterThan(14_000);
    expect(a.stats()).toMatchObject({ l1Hits: 0 });
    expect(await a.get('x')).toEqual({ n: 1, s: ['é'] });
    expect(a.stats().l1Hits).toBe(1);
    expect(b.stats().l2Hits).toBe(1);
  });

  it('a value expires after its TTL in L1 and L2', async () => {
    const { a, b, k } = pair();
    await a.set('t', 7, { ttlMs: 80, jitter: 0 });
    expect(await a.get('t')).toBe(7);
    expect(await b.get('t')).toBe(7);
    await sleep(120);
    expect(await a.get('t')).toBeUndefined();
    expect(await b.get('t')).toBeUndefined();
    expect(await raw.exists(k.entry('t'))).toBe(0);
  });

  it('within grace a stale value is served and refreshed once in the background; a failing loader keeps it', async () => {
    const { a, b } = pair();
    let n = 0;
    const loader = async (): Promise<number> => {
      await sleep(30);
      return ++n;
    };
    const opts = { ttlMs: 80, jitter: 0, graceMs: 5000 };
    expect(await a.getOrLoad('g', loader, opts)).toBe(1);
    await sleep(120);
    const stale = await Promise.all([a.getOrLoad('g', loader, opts), a.getOrLoad('g', loader, opts), b.getOrLoad('g', loader, opts)]);
    expect(stale).toEqual([1, 1, 1]);
    expect(a.stats().staleServed).toBe(2);
    expect(b.stats().staleServed).toBe(1);
    await eventually(async () => ((await a.get<number>('g')) ?? 0) > 1 && ((await b.get<number>('g')) ?? 0) > 1);
    expect(n).toBeLessThanOrEqual(3); // one refresh per node at most
    await sleep(120);
    const failing = async (): Promise<number> => {
      throw new Error('origin down');
    };
    const before = await b.getOrLoad('g', failing, opts);
    expect(typeof before).toBe('number');
    await sleep(50);
    expect(await b.getOrLoad('g', failing, opts)).toBe(before);
  });

  it('negative caching stores a cached miss for negativeTtlMs; without it a miss is never written', async () => {
    const { a, b, k } = pair();
    let calls = 0;
    const none = async (): Promise<undefined> => {
      calls++;
      return undefined;
    };
    expect(await a.getOrLoad('missing', none)).toBeUndefined();
    expect(await a.getOrLoad('missing', none)).toBeUndefined();
    expect(calls).toBe(2);
    expect(await raw.exists(k.entry('missing'))).toBe(0);
    expect(await a.getOrLoad('neg', none, { negativeTtlMs: 100 })).toBeUndefined();
    expect(await raw.hgetall(k.entry('neg'))).toEqual({ v: expect.stringMatching(/^ver/), n: '1' });
    expect(await a.getOrLoad('neg', none, { negativeTtlMs: 100 })).toBeUndefined();
    expect(await b.getOrLoad('neg', none, { negativeTtlMs: 100 })).toBeUndefined();
    expect(calls).toBe(3);
    expect(await b.getOrLoad('nul', async () => null, { negativeTtlMs: 100 })).toBeNull();
    expect(await a.getOrLoad('nul', async () => 5, { negativeTtlMs: 100 })).toBeNull();
    await sleep(150);
    expect(await a.getOrLoad('neg', none, { negativeTtlMs: 100 })).toBeUndefined();
    expect(calls).toBe(4);
  });
});

describe('invalidation and tags', () => {
  it('invalidate leaves a tombstone for tombstoneMs; a later load writes again', async () => {
    const ns = randomQueue('ns');
    const a = new CacheService(connA, { namespace: ns, tombstoneMs: 200 });
    services.push(a);
    const k = new CacheKeys(ns);
    await a.set('k', 1);
    await a.invalidate('k');
    expect(await raw.hget(k.entry('k'), 'x')).toBe('1');
    const pttl = await raw.pttl(k.entry('k'));
    expect(pttl).toBeGreaterThan(100);
    expect(pttl).toBeLessThanOrEqual(200);
    expect(await a.get('k')).toBeUndefined();
    expect(await a.getOrLoad('k', () => 2)).toBe(2);
    expect(a.stats().invalidations).toBe(1);
  });

  it('invalidateTag invalidates every member and leaves other tags alone; the members stay until they expire', async () => {
    const { a, b, k } = pair();
    await a.set('a', 1, { tags: ['t'] });
    await a.set('b', 2, { tags: ['t', 'u'] });
    await b.getOrLoad('c', () => 3, { tags: ['u'] });
    expect((await raw.zrange(k.tag('t'), 0, -1)).sort()).toEqual(['a', 'b']);
    await b.invalidateTag('t');
    expect(await raw.hget(k.entry('a'), 'x')).toBe('1');
    expect(await raw.hget(k.entry('b'), 'x')).toBe('1');
    expect(await raw.zcard(k.tag('t'))).toBe(2);
    expect(await raw.get(k.mark('t'))).toMatch(/^ver/);
    expect(await b.get('a')).toBeUndefined();
    expect(await b.get('c')).toBe(3);
    expect(b.stats().invalidations).toBe(2);
    await b.invalidateTag('nothing-here');
    await a.invalidateTag('u');
    expect(await a.get('c')).toBeUndefined();
  });
});

describe('herds', () => {
  it('1,000 concurrent getOrLoad of one cold key in one process run the loader once', async () => {
    const { a } = pair();
    let calls = 0;
    const loader = async (): Promise<{ v: number }> => {
      calls++;
      await sleep(20);
      return { v: 42 };
    };
    const got = await Promise.all(Array.from({ length: 1000 }, () => a.getOrLoad('hot', loader)));
    expect(calls).toBe(1);
    expect(got.every((g) => g.v === 42)).toBe(true);
    expect(a.stats()).toMatchObject({ loads: 1, misses: 1 });
  });

  it('with fillLease, a herd on two nodes runs the loader once', async () => {
    const { a, b } = pair();
    let calls = 0;
    const loader = async (): Promise<string> => {
      calls++;
      await sleep(100);
      return 'once';
    };
    const opts = { fillLease: true, fillLeaseMs: 3000 };
    const got = await Promise.all(
      Array.from({ length: 1000 }, (_, i) => (i % 2 === 0 ? a : b).getOrLoad('cold', loader, opts)),
    );
    expect(calls).toBe(1);
    expect(new Set(got)).toEqual(new Set(['once']));
    expect(a.stats().loads + b.stats().loads).toBe(1);
  });

  it('a fill-lease loser loads itself when the winner fails', async () => {
    const { a, b } = pair();
    const g = gate();
    const failing = a.getOrLoad('f', async () => {
      await g.wait;
      throw new Error('boom');
    }, { fillLease: true, fillLeaseMs: 2000 });
    await sleep(20);
    const waiting = b.getOrLoad('f', async () => 'b loaded', { fillLease: true, fillLeaseMs: 2000 });
    await sleep(30);
    g.open();
    await expect(failing).rejects.toThrow('boom');
    expect(await waiting).toBe('b loaded');
  });
});

describe('L1 bounds', () => {
  it('evicts the least recently used entry past l1MaxEntries; the value is then served from L2', async () => {
    const { a } = pair({ l1MaxEntries: 2 });
    await a.set('one', 1);
    await a.set('two', 2);
    expect(await a.get('one')).toBe(1); // `one` is now the most recently used
    await a.set('three', 3); // evicts `two`
    expect(a.l1.size).toBe(2);
    const before = a.stats();
    expect(await a.get('one')).toBe(1);
    expect(await a.get('three')).toBe(3);
    expect(await a.get('two')).toBe(2);
    const after = a.stats();
    expect(after.l1Hits - before.l1Hits).toBe(2);
    expect(after.l2Hits - before.l2Hits).toBe(1);
  });
});
