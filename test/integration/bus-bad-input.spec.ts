import type { Redis } from 'iovalkey';
import { firstValueFrom } from 'rxjs';
import { BusService } from '../../src/index.js';
import { EchoMqConnection, PROTOCOL_VERSION, busWire, eventIdOf, runScript, topicKeys } from '../../src/protocol.js';
import type { ScriptClient } from '../../src/protocol.js';
import { openConnection, randomQueue, rawClient } from '../helpers/valkey.js';
import { codeOf, collect, serverMs, snapshot } from './bus-core.helpers.js';

let raw: Redis, conn: EchoMqConnection, bus: BusService, small: BusService, sc: ScriptClient;
beforeAll(async () => {
  raw = rawClient();
  conn = await openConnection();
  bus = new BusService(conn, { trimIntervalMs: 0 });
  small = new BusService(conn, { trimIntervalMs: 0, maxPayloadBytes: 1024 });
  sc = conn.scriptClient;
});
afterAll(async () => {
  await Promise.all([bus.close(), small.close()]);
  await Promise.all([conn.close(), raw.quit()]);
});

/** A topic with a log, a policy, an archive segment and a group: every key a write could touch. */
async function seeded(): Promise<string> {
  const t = randomQueue('badbus');
  await bus.publishMany(t, [1, 2, 3]);
  await bus.setRetention(t, { maxLen: 2 });
  await bus.trim(t);
  await raw.xgroup('CREATE', topicKeys(t).log, 'g', '0');
  expect(await raw.exists(topicKeys(t).meta, topicKeys(t).log, topicKeys(t).archive)).toBe(3);
  return t;
}

/** `act` must fail with `code` and leave every key of topic `t` byte for byte as it was. */
async function refusedUnchanged(t: string, code: string, act: () => unknown): Promise<void> {
  const before = await snapshot(raw, `emq:{${t}}:*`);
  expect({ code: await codeOf(act), keys: await snapshot(raw, `emq:{${t}}:*`) }).toEqual({ code, keys: before });
}

/**
 * Every persistent key in the shared Valkey. Other suites' expiring keys (cache leases, dedup
 * markers) may vanish on their own while this test runs, so only keys without a TTL are compared;
 * a write by the refused operation would add a key, and additions are caught whatever their TTL.
 */
async function allKeys(): Promise<{ persistent: string[]; all: Set<string> }> {
  const keys = (await raw.keys('*')).sort();
  const ttls = keys.length ? await Promise.all(keys.map((k) => raw.pttl(k))) : [];
  return { persistent: keys.filter((_k, i) => ttls[i] === -1), all: new Set(keys) };
}

describe('hostile topic names', () => {
  const hostile: unknown[] = ['', '{a}', 'a{b', 'a}b', 'a:b', 'a*', 'a?', 'a b', 'a\nb', 'x'.repeat(101), 'ünï', 42, null];
  it.each(hostile.map((n) => [JSON.stringify(n)?.slice(0, 30), n]))('%s is refused by every operation, before any I/O', async (_shown, name) => {
    const t = name as string;
    const before = await allKeys();
    const ops: [string, () => unknown][] = [
      ['publish', () => bus.publish(t, 1)],
      ['publishMany', () => bus.publishMany(t, [1])],
      ['replay', () => collect(bus.replay(t))],
      ['setRetention', () => bus.setRetention(t, { maxLen: 1 })],
      ['getRetention', () => bus.getRetention(t)],
      ['trim', () => bus.trim(t)],
      ['signal', () => bus.signal(t, 1)],
      ['signals', () => firstValueFrom(bus.signals(t))],
      ['deadLetters', () => bus.deadLetters(t)],
    ];
    for (const [op, act] of ops) expect({ op, code: await codeOf(act) }).toEqual({ op, code: 'EMQ_BAD_NAME' });
    const after = await allKeys();
    expect({ added: [...after.all].filter((k) => !before.all.has(k)), persistent: after.persistent }).toEqual({ added: [], persistent: before.persistent });
  });
});

describe('payloads and batches', () => {
  it('refuses non-JSON payloads, alone or in a batch, writing nothing', async () => {
    const t = await seeded();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const bad of [undefined, () => 1, Symbol('s'), 10n, cyclic]) {
      await refusedUnchanged(t, 'EMQ_BAD_PAYLOAD', () => bus.publish(t, bad as never));
      await refusedUnchanged(t, 'EMQ_BAD_PAYLOAD', () => bus.publishMany(t, [1, bad as never, 3]));
      await refusedUnchanged(t, 'EMQ_BAD_PAYLOAD', () => bus.signal(t, bad as never));
    }
  });

  it('refuses oversized payloads and batches, writing nothing', async () => {
    const t = await seeded();
    const big = 'x'.repeat(1100);
    await refusedUnchanged(t, 'EMQ_PAYLOAD_TOO_LARGE', () => small.publish(t, big));
    await refusedUnchanged(t, 'EMQ_PAYLOAD_TOO_LARGE', () => small.publishMany(t, ['ok', big]));
    await refusedUnchanged(t, 'EMQ_PAYLOAD_TOO_LARGE', () => small.signal(t, big));
    await refusedUnchanged(t, 'EMQ_BATCH_TOO_LARGE', () => bus.publishMany(t, new Array<number>(1001).fill(1)));
    await refusedUnchanged(t, 'EMQ_BAD_OPTION', () => bus.publishMany(t, 'abc' as never));
    // Exactly at the limit is fine (the JSON of the string adds its two quotes).
    expect(await small.publish(t, 'y'.repeat(1022))).toMatch(/^evt/);
    expect(await codeOf(() => new BusService(conn, { maxPayloadBytes: 0 }))).toBe('EMQ_BAD_OPTION');
    expect(await codeOf(() => new BusService(conn, { trimIntervalMs: -1 }))).toBe('EMQ_BAD_OPTION');
  });

  it('publish.lua re-checks sizes, counts, arguments, key types and the version fence itself', async () => {
    const t = await seeded();
    const k = topicKeys(t);
    await refusedUnchanged(t, 'EMQ_PAYLOAD_TOO_LARGE', () => busWire.publish(sc, k, 10, ['1', '"01234567890"']));
    await refusedUnchanged(t, 'EMQ_BATCH_TOO_LARGE', () => busWire.publish(sc, k, 100, new Array<string>(1001).fill('1')));
    await refusedUnchanged(t, 'EMQ_BAD_ARG', () => busWire.publish(sc, k, 100, ['1', '']));
    await refusedUnchanged(t, 'EMQ_BAD_ARG', () => busWire.publish(sc, k, 100, [{ p: '1', tp: 'x'.repeat(257) }]));
    await refusedUnchanged(t, 'EMQ_BAD_ARG', () => runScript(sc, 'publish', [k.meta, k.log], [PROTOCOL_VERSION, 100, 3, '1', '2']));
    await refusedUnchanged(t, 'EMQ_BAD_ARG', () => runScript(sc, 'publish', [k.meta, k.log], [PROTOCOL_VERSION, 0, 1, '1']));
    await refusedUnchanged(t, 'EMQ_VERSION', () => runScript(sc, 'publish', [k.meta, k.log], ['3', 100, 1, '1']));
    await raw.hset(k.meta, 'v', '3');
    await refusedUnchanged(t, 'EMQ_VERSION', () => bus.publish(t, 1));
    await refusedUnchanged(t, 'EMQ_VERSION', () => bus.trim(t));
    await refusedUnchanged(t, 'EMQ_VERSION', () => bus.setRetention(t, { maxLen: 5 }));
    const other = randomQueue('badbus');
    await raw.set(topicKeys(other).log, 'not a stream');
    await refusedUnchanged(other, 'EMQ_WRONGTYPE', () => bus.publish(other, 1));
    await refusedUnchanged(other, 'EMQ_WRONGTYPE', () => bus.trim(other));
    const third = randomQueue('badbus');
    await raw.set(topicKeys(third).meta, 'not a hash');
    await refusedUnchanged(third, 'EMQ_WRONGTYPE', () => bus.publish(third, 1));
    await refusedUnchanged(third, 'EMQ_WRONGTYPE', () => bus.setRetention(third, { maxLen: 1 }));
    await refusedUnchanged(third, 'EMQ_WRONGTYPE', () => bus.trim(third));
  });

  it('every numeric argument of the bus scripts is a decimal integer in range; missing keys or arguments are EMQ_BAD_ARG', async () => {
    const t = await seeded();
    const k = topicKeys(t);
    const trimKeys = [k.meta, k.log, k.archive, k.segPrefix];
    for (const bad of ['NaN', 'inf', '1.5', '1e3', '', ' 5', '-1']) {
      // A NaN limit used to switch the size check off, and published.
      await refusedUnchanged(t, 'EMQ_BAD_ARG', () => runScript(sc, 'publish', [k.meta, k.log], [PROTOCOL_VERSION, bad, 1, '"x"']));
      await refusedUnchanged(t, 'EMQ_BAD_ARG', () => runScript(sc, 'publish', [k.meta, k.log], [PROTOCOL_VERSION, 100, bad, '"x"']));
      await refusedUnchanged(t, 'EMQ_BAD_ARG', () => runScript(sc, 'trim', trimKeys, [PROTOCOL_VERSION, bad, 100, 10]));
      await refusedUnchanged(t, 'EMQ_BAD_ARG', () => runScript(sc, 'trim', trimKeys, [PROTOCOL_VERSION, 10, bad, 10]));
      await refusedUnchanged(t, 'EMQ_BAD_ARG', () => runScript(sc, 'trim', trimKeys, [PROTOCOL_VERSION, 10, 100, bad]));
      if (bad !== '') await refusedUnchanged(t, 'EMQ_BAD_ARG', () => runScript(sc, 'retention', [k.meta], [PROTOCOL_VERSION, bad, '', '']));
    }
    // Missing KEYS or ARGV: typed refusals, never a raw Lua error.
    await refusedUnchanged(t, 'EMQ_BAD_ARG', () => runScript(sc, 'trim', [], [PROTOCOL_VERSION, 10, 100, 10]));
    await refusedUnchanged(t, 'EMQ_BAD_ARG', () => runScript(sc, 'trim', trimKeys, [PROTOCOL_VERSION]));
    await refusedUnchanged(t, 'EMQ_BAD_ARG', () => runScript(sc, 'publish', [], [PROTOCOL_VERSION, 100, 1, '1']));
    await refusedUnchanged(t, 'EMQ_BAD_ARG', () => runScript(sc, 'publish', [k.meta, k.log], [PROTOCOL_VERSION, 100]));
    await refusedUnchanged(t, 'EMQ_BAD_ARG', () => runScript(sc, 'retention', [], [PROTOCOL_VERSION, 1, '', '']));
    await refusedUnchanged(t, 'EMQ_BAD_ARG', () => runScript(sc, 'dead-letter', [], [PROTOCOL_VERSION]));
  });

  it('trim.lua refuses bad arguments and a corrupt stored policy, writing nothing', async () => {
    const t = await seeded();
    const k = topicKeys(t);
    await bus.publishMany(t, [4, 5, 6]);
    await refusedUnchanged(t, 'EMQ_BAD_ARG', () => busWire.trim(sc, k, 0));
    await refusedUnchanged(t, 'EMQ_BAD_ARG', () => busWire.trim(sc, k, 1001));
    await refusedUnchanged(t, 'EMQ_BAD_ARG', () => busWire.trim(sc, k, 10, 0));
    await refusedUnchanged(t, 'EMQ_BAD_ARG', () => busWire.trim(sc, k, 10, 100, 1001));
    for (const corrupt of ['abc', '0', '-5', '1.5', '1e3']) {
      await raw.hset(k.meta, 'maxLen', corrupt);
      await refusedUnchanged(t, 'EMQ_BAD_ARG', () => bus.trim(t));
    }
  });
});

describe('replay options', () => {
  it('refuses malformed ids, inverted and future ranges, bad batches and orders, reading nothing', async () => {
    const t = randomQueue('badbus');
    const ids = await bus.publishMany(t, [1, 2]);
    const now = await serverMs(raw);
    const future = eventIdOf(`${now + 3_600_000}-0`);
    const cases: [string, object][] = [
      ['EMQ_BAD_ID', { from: 'evt123' }],
      ['EMQ_BAD_ID', { to: 'job0IfYLyNaKuG' }],
      ['EMQ_BAD_ID', { from: '' }],
      ['EMQ_BAD_ID', { from: 'evtLygHa16AHYG' }],
      ['EMQ_BAD_ID', { from: '1795947512131-0' }],
      ['EMQ_BAD_OPTION', { from: 42 }],
      ['EMQ_BAD_OPTION', { from: new Date(NaN) }],
      ['EMQ_BAD_OPTION', { from: ids[1], to: ids[0] }],
      ['EMQ_BAD_OPTION', { from: new Date(now), to: new Date(now - 1) }],
      ['EMQ_BAD_OPTION', { from: future }],
      ['EMQ_BAD_OPTION', { from: new Date(now + 3_600_000) }],
      ['EMQ_BAD_OPTION', { batch: 0 }],
      ['EMQ_BAD_OPTION', { batch: 1001 }],
      ['EMQ_BAD_OPTION', { batch: 1.5 }],
      ['EMQ_BAD_OPTION', { order: 'up' }],
    ];
    for (const [code, o] of cases) expect({ o, code: await codeOf(() => collect(bus.replay(t, o))) }).toEqual({ o, code });
    expect(await codeOf(() => bus.deadLetters(t, { count: 0 }))).toBe('EMQ_BAD_OPTION');
  });
});

describe('retention options', () => {
  it.each<[string, unknown]>([
    ['maxLen 0', { maxLen: 0 }],
    ['maxLen -1', { maxLen: -1 }],
    ['maxLen 1.5', { maxLen: 1.5 }],
    ['maxLen "10"', { maxLen: '10' }],
    ['maxAgeMs NaN', { maxAgeMs: NaN }],
    ['maxAgeMs Infinity', { maxAgeMs: Infinity }],
    ['archiveMaxAgeMs 2^53', { archiveMaxAgeMs: 2 ** 53 }],
    ['unknown field', { maxLen: 5, keep: 1 }],
    ['null', null],
    ['a number', 5],
  ])('refuses %s with EMQ_BAD_OPTION, leaving the policy as it was', async (_what, policy) => {
    const t = await seeded();
    await refusedUnchanged(t, 'EMQ_BAD_OPTION', () => bus.setRetention(t, policy as never));
    expect(await bus.getRetention(t)).toEqual({ maxLen: 2, archiveMaxAgeMs: 604_800_000, archiveMaxBytes: 67_108_864 });
  });
});
