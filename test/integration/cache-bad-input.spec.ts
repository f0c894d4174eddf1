import type { Redis } from 'iovalkey';
import { CacheService } from '../../src/cache/cache-service.js';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { CacheKeys } from '../../src/core/keys.js';
import { PROTOCOL_VERSION, runScript } from '../../src/core/scripts.js';
import { codeOf, snapshot as snapshotOf } from '../helpers/refusals.js';
import { openConnection, randomQueue, rawClient } from '../helpers/valkey.js';

let raw: Redis, conn: EchoMqConnection, cache: CacheService, ns: string, k: CacheKeys;
beforeAll(async () => {
  raw = rawClient();
  conn = await openConnection();
  ns = randomQueue('bad');
  k = new CacheKeys(ns);
  cache = new CacheService(conn, { namespace: ns, maxValueBytes: 1024 });
  await cache.set('seed', { seeded: true }, { tags: ['seed'] });
});
afterAll(async () => {
  await cache.close();
  await Promise.all([conn.close(), raw.quit()]);
});

/** Every key of the namespace (its entries' slots and its own slot) with its DUMP. */
const snapshot = () => snapshotOf(raw, [`emq:{c:${ns}:*`, `emq:{${ns}}:*`]);

/** `act` must fail with `code` and leave every key of the namespace as it was. */
async function refused(code: string, act: () => unknown): Promise<void> {
  const before = await snapshot();
  expect({ code: await codeOf(act), keys: await snapshot() }).toEqual({ code, keys: before });
}

const hostile = ['{', '}', 'a{b}', 'a b', 'a\nb', '', 'x'.repeat(600), 'é'];
const cycle: Record<string, unknown> = {};
cycle.self = cycle;

describe('cache bad input: typed errors, nothing written', () => {
  it.each(hostile.map((h) => [JSON.stringify(h).slice(0, 20), h]))('hostile key %s is refused by every call', async (_label, key) => {
    let loaded = 0;
    const loader = (): number => ++loaded;
    await refused('EMQ_BAD_NAME', () => cache.set(key, 1));
    await refused('EMQ_BAD_NAME', () => cache.get(key));
    await refused('EMQ_BAD_NAME', () => cache.getOrLoad(key, loader));
    await refused('EMQ_BAD_NAME', () => cache.invalidate(key));
    await refused('EMQ_BAD_NAME', () => cache.invalidateTag(key));
    await refused('EMQ_BAD_NAME', () => cache.set('ok', 1, { tags: ['fine', key] }));
    await refused('EMQ_BAD_NAME', () => cache.set('ok', 1, { namespace: key }));
    expect(loaded).toBe(0);
  });

  it.each([
    ['undefined', undefined],
    ['a function', () => 1],
    ['a symbol', Symbol('s')],
    ['a BigInt', 10n],
    ['a cycle', cycle],
  ])('set of %s is EMQ_BAD_PAYLOAD', async (_label, value) => {
    await refused('EMQ_BAD_PAYLOAD', () => cache.set('v', value as never, { tags: ['t'] }));
  });

  it('an over-large value is EMQ_PAYLOAD_TOO_LARGE; an unserialisable loaded value is EMQ_BAD_PAYLOAD', async () => {
    await refused('EMQ_PAYLOAD_TOO_LARGE', () => cache.set('big', 'x'.repeat(2000)));
    await refused('EMQ_PAYLOAD_TOO_LARGE', () => cache.getOrLoad('big', () => 'x'.repeat(2000)));
    await refused('EMQ_BAD_PAYLOAD', () => cache.getOrLoad('bigint', () => 5n as never));
  });

  it('a tagged getOrLoad whose loader returns an unserialisable or oversized value writes nothing, not even its tags (issue 7 #14)', async () => {
    await refused('EMQ_PAYLOAD_TOO_LARGE', () => cache.getOrLoad('big-t', () => 'x'.repeat(2000), { tags: ['seed', 'fresh'] }));
    await refused('EMQ_BAD_PAYLOAD', () => cache.getOrLoad('bigint-t', () => 5n as never, { tags: ['seed', 'fresh'] }));
    await refused('EMQ_BAD_PAYLOAD', () => cache.getOrLoad('cycle-t', () => cycle as never, { tags: ['fresh'] }));
  });

  it.each([
    ['ttlMs -1', { ttlMs: -1 }],
    ['ttlMs 0', { ttlMs: 0 }],
    ['ttlMs NaN', { ttlMs: Number.NaN }],
    ['ttlMs Infinity', { ttlMs: Number.POSITIVE_INFINITY }],
    ['graceMs -1', { graceMs: -1 }],
    ['jitter 2', { jitter: 2 }],
    ['negativeTtlMs -5', { negativeTtlMs: -5 }],
    ['fillLeaseMs 0', { fillLeaseMs: 0 }],
  ])('%s is EMQ_BAD_OPTION for set and getOrLoad', async (_label, opts) => {
    await refused('EMQ_BAD_OPTION', () => cache.set('o', 1, opts));
    await refused('EMQ_BAD_OPTION', () => cache.getOrLoad('o', () => 1, opts));
  });

  it('bad service options throw at construction', () => {
    for (const o of [{ ttlMs: 0 }, { ttlMs: -5 }, { l1MaxEntries: -1 }, { tombstoneMs: 0 }, { maxValueBytes: 0 }]) {
      expect(() => new CacheService(conn, o)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    }
    expect(() => new CacheService(conn, { namespace: 'no{pe}' })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
  });
});

describe('the cache scripts gate their arguments', () => {
  const set = (ver: string, extra: Partial<Record<'ttl' | 'max' | 'tags' | 'grace' | 'version', string>> = {}) =>
    runScript(conn.scriptClient, 'cache-set', [k.entry('raw')], [
      extra.version ?? PROTOCOL_VERSION, ver, '"v"', extra.ttl ?? '60000', extra.max ?? '1024', extra.tags ?? '', extra.grace ?? '0',
    ]);

  it('refuses malformed arguments before writing', async () => {
    await refused('EMQ_VERSION', () => set('ver0000000000Z', { version: '3' }));
    await refused('EMQ_BAD_ID', () => set('job0000000000Z'));
    await refused('EMQ_BAD_ID', () => set('verzzzzzzzzzzz'));
    await refused('EMQ_BAD_ARG', () => set('ver0000000000Z', { ttl: '0' }));
    await refused('EMQ_BAD_ARG', () => set('ver0000000000Z', { ttl: '-5' }));
    await refused('EMQ_BAD_ARG', () => set('ver0000000000Z', { grace: '1.5' }));
    await refused('EMQ_BAD_ARG', () => set('ver0000000000Z', { tags: 'a {b}' }));
    await refused('EMQ_PAYLOAD_TOO_LARGE', () => set('ver0000000000Z', { max: '2' }));
    await refused('EMQ_BAD_ARG', () => runScript(conn.scriptClient, 'cache-invalidate', [k.entry('raw')], [PROTOCOL_VERSION, 'ver0000000000Z', '0']));
    await refused('EMQ_BAD_ID', () => runScript(conn.scriptClient, 'cache-invalidate', [k.entry('raw')], [PROTOCOL_VERSION, 'nope', '10']));
    await refused('EMQ_BAD_ARG', () => runScript(conn.scriptClient, 'cache-lease', [k.lease('raw')], [PROTOCOL_VERSION, 'take', 'bad token', '10']));
    await refused('EMQ_BAD_ARG', () => runScript(conn.scriptClient, 'cache-lease', [k.lease('raw')], [PROTOCOL_VERSION, 'grab', 't', '10']));
  });

  it('compares versions byte by byte: Z (0x5A) < a (0x61) < z (0x7A)', async () => {
    expect(await set('ver0000000000Z')).toEqual([1]);
    expect(await set('ver0000000000z')).toEqual([1]);
    expect(await set('ver0000000000a')).toEqual([0, 'ver0000000000z']);
    expect(await set('ver0000000000z')).toEqual([0, 'ver0000000000z']);
    expect(await runScript(conn.scriptClient, 'cache-invalidate', [k.entry('raw')], [PROTOCOL_VERSION, 'ver0000000000a', '1000'])).toBe(0);
    expect(await runScript(conn.scriptClient, 'cache-invalidate', [k.entry('raw')], [PROTOCOL_VERSION, 'ver00000000010', '1000'])).toBe(1);
    expect(await set('ver0000000000z')).toEqual([0, 'ver00000000010']);
    expect(await raw.hgetall(k.entry('raw'))).toEqual({ v: 'ver00000000010', x: '1' });
  });

  it('refuses NaN, fractions, exponents and missing arguments with EMQ_BAD_ARG, writing nothing (issue 7 #1/#3)', async () => {
    const run = (name: 'cache-set' | 'cache-invalidate' | 'cache-lease' | 'cache-announce' | 'cache-get', keys: string[], args: string[]) =>
      runScript(conn.scriptClient, name, keys, args);
    // The previous test leaves a 1 s tombstone on `raw`: its expiry mid-test would look like a write.
    await raw.del(k.entry('raw'));
    for (const ttl of ['NaN', 'nan', 'inf', '1e3', '1.0', ' 5', '']) {
      await refused('EMQ_BAD_ARG', () => set('ver0000000000Z', { ttl }));
      await refused('EMQ_BAD_ARG', () => set('ver0000000000Z', { max: ttl }));
      await refused('EMQ_BAD_ARG', () => set('ver0000000000Z', { grace: ttl }));
      await refused('EMQ_BAD_ARG', () => run('cache-invalidate', [k.entry('raw')], [PROTOCOL_VERSION, 'ver0000000000Z', ttl]));
      await refused('EMQ_BAD_ARG', () => run('cache-lease', [k.lease('raw')], [PROTOCOL_VERSION, 'take', 'tok', ttl]));
      await refused('EMQ_BAD_ARG', () => run('cache-announce', [k.log, k.signal], [PROTOCOL_VERSION, ttl, 'ver0000000000Z', 'a']));
    }
    await refused('EMQ_BAD_ARG', () => run('cache-set', [k.entry('raw')], [PROTOCOL_VERSION, 'ver0000000000Z']));
    await refused('EMQ_BAD_ARG', () => run('cache-set', [], [PROTOCOL_VERSION, 'ver0000000000Z', '"v"', '60000', '1024', '', '0']));
    await refused('EMQ_BAD_ARG', () => run('cache-invalidate', [k.entry('raw')], [PROTOCOL_VERSION]));
    await refused('EMQ_BAD_ARG', () => run('cache-lease', [k.lease('raw')], [PROTOCOL_VERSION, 'take']));
    await refused('EMQ_BAD_ARG', () => run('cache-announce', [k.log, k.signal], [PROTOCOL_VERSION]));
    await refused('EMQ_BAD_ARG', () => run('cache-announce', [k.log, k.signal], [PROTOCOL_VERSION, '10']));
    await refused('EMQ_BAD_ARG', () => run('cache-get', [k.entry('raw')], [PROTOCOL_VERSION, '0']));
    await refused('EMQ_BAD_ARG', () => run('cache-get', [k.entry('raw'), k.lease('raw')], [PROTOCOL_VERSION]));
  });

  it('refuses keys of the wrong type with EMQ_WRONGTYPE, writing nothing (issue 7 #3)', async () => {
    const run = (name: 'cache-set' | 'cache-invalidate' | 'cache-lease' | 'cache-announce' | 'cache-get', keys: string[], args: string[]) =>
      runScript(conn.scriptClient, name, keys, args);
    await raw.set(k.entry('str'), 'x');
    await raw.rpush(k.lease('lst'), 'x');
    await raw.set(k.log, 'x');
    try {
      await refused('EMQ_WRONGTYPE', () => run('cache-set', [k.entry('str')], [PROTOCOL_VERSION, 'ver0000000000Z', '"v"', '60000', '1024', '', '0']));
      await refused('EMQ_WRONGTYPE', () => run('cache-invalidate', [k.entry('str')], [PROTOCOL_VERSION, 'ver0000000000Z', '1000']));
      await refused('EMQ_WRONGTYPE', () => run('cache-get', [k.entry('str'), k.lease('str')], [PROTOCOL_VERSION, '1']));
      await refused('EMQ_WRONGTYPE', () => run('cache-lease', [k.lease('lst')], [PROTOCOL_VERSION, 'take', 'tok', '1000']));
      await refused('EMQ_WRONGTYPE', () => run('cache-lease', [k.lease('lst')], [PROTOCOL_VERSION, 'drop', 'tok', '1000']));
      await refused('EMQ_WRONGTYPE', () => run('cache-announce', [k.log, k.signal], [PROTOCOL_VERSION, '10', 'ver0000000000Z', 'a']));
    } finally {
      await raw.del(k.entry('str'), k.lease('lst'), k.log);
    }
  });

  it('refuses to overwrite an entry that is not cache data of this protocol', async () => {
    await raw.hset(k.entry('foreign'), 'v', '7');
    await refused('EMQ_VERSION', () =>
      runScript(conn.scriptClient, 'cache-set', [k.entry('foreign')], [PROTOCOL_VERSION, 'ver0000000000Z', '1', '1000', '1024', '', '0']),
    );
  });
});
