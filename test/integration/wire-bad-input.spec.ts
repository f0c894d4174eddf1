/**
 * Part A of the queue wire (enqueue, claim, complete, extend, peek) called straight, as another
 * runtime would: every malformed call is refused with an `EMQ_<CODE>` reply and writes nothing.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'iovalkey';
import { queueKeys, runScript, wire } from '../../src/protocol.js';
import { BUILTIN_DEFAULTS, resolveDefaults } from '../../src/unstable.js';
import { luaDir } from '../../src/core/scripts.js';
import { QueueService } from '../../src/index.js';
import type { EchoMqConnection, QueueKeys, ScriptName } from '../../src/protocol.js';
import { codeOf, refusedUnchanged, rerun, sent, wireJob, type SentCall } from '../helpers/refusals.js';
import { openConnection, randomQueue, rawClient } from '../helpers/valkey.js';
import { PROTOCOL_VERSION } from '../../src/core/scripts.js';

let raw: Redis, conn: EchoMqConnection, queues: QueueService;
beforeAll(async () => {
  raw = rawClient();
  conn = await openConnection();
  queues = new QueueService(conn, resolveDefaults(BUILTIN_DEFAULTS, { eventsLog: 10 }));
});
afterAll(async () => Promise.all([conn.close(), raw.quit()]));

/**
 * A queue with work everywhere part A reads or writes: job `a` active (its token), `b` done, three
 * pending (`next`, the oldest, has its own options), `due` scheduled and due, `later` scheduled in
 * 10 minutes; the lifecycle log is on (meta.elog = 10), so the events stream is written too.
 */
interface Seed {
  q: string;
  k: QueueKeys;
  a: { id: string; token: string };
  next: string;
  due: string;
  later: string;
  fresh: [string, string];
}
async function seed(): Promise<Seed> {
  const q = randomQueue('wbad');
  const k = queueKeys(q);
  const c = conn.scriptClient;
  await queues.enqueue(q, { b: 1 });
  const [b] = (await wire.claim(c, k, 1, 60_000, 0)).jobs;
  expect(await wire.complete(c, k, 10, [{ id: b.id, token: b.token, result: '{}' }])).toEqual([1]);
  await queues.enqueue(q, { a: 1 });
  const [a] = (await wire.claim(c, k, 1, 60_000, 0)).jobs;
  const next = await queues.enqueue(q, { n: 1 }, { attempts: 2 });
  await queues.enqueueMany(q, [{ payload: 2 }, { payload: 3 }]);
  const later = await queues.enqueue(q, { later: 1 }, { delay: 600_000 });
  const due = await queues.enqueue(q, { due: 1 }, { delay: 1 });
  await new Promise((r) => setTimeout(r, 5));
  return { q, k, a: { id: a.id, token: a.token }, next, due, later, fresh: [queues.mintId(), queues.mintId()] };
}

type Build = (s: Seed) => Promise<SentCall>;
const calls: Record<'enqueue' | 'claim' | 'complete' | 'extend' | 'peek', Build> = {
  enqueue: (s) => sent((c) => wire.enqueue(c, s.k, 1024, [wireJob(s.fresh[0], '{}', { maxAttempts: 2 }), wireJob(s.fresh[1], '{}', { delayMs: 60_000 })], 10)),
  // The required arguments only (no trailing optional default-fair): the shapes below drop the last one.
  claim: (s) => sent((c) => wire.claim(c, s.k, 1, 30_000, 1000, false)),
  complete: (s) => sent((c) => wire.complete(c, s.k, 1, [{ ...s.a, result: '{"ok":1}' }])),
  extend: (s) => sent((c) => wire.extend(c, s.k, 30_000, [s.a])),
  peek: (s) => sent((c) => wire.peek(c, s.k, s.later)),
};
const run = (name: ScriptName, call: SentCall, patch: Record<number, string | number> = {}) => rerun(conn.scriptClient, name, call, patch);

describe('the seeded calls succeed as they are (so each refusal below is caused by its one defect)', () => {
  it.each(Object.keys(calls))('%s', async (name) => {
    const s = await seed();
    const call = await calls[name as keyof typeof calls](s);
    await expect(run(name as ScriptName, call)).resolves.toBeDefined();
  });
});

describe('numbers that are not decimal integers (NaN, inf, fractions, exponents, blanks, hex)', () => {
  const garbage = ['NaN', 'nan', 'inf', '-inf', '1e3', '1.5', '0x10', ' 5', '5 ', '+5', '', '99999999999999999'];
  const numeric: [ScriptName, number, string][] = [
    ['enqueue', 1, 'payload limit'], ['enqueue', 2, 'job count'], ['enqueue', 3, 'lifecycle-log length'],
    ['enqueue', 6, 'delay'], ['enqueue', 7, 'run-at'], ['enqueue', 8, 'max attempts'],
    ['claim', 1, 'claim count'], ['claim', 2, 'lease'], ['claim', 3, 'promote limit'],
    ['complete', 1, 'keepDone'], ['complete', 2, 'job count'],
    ['extend', 1, 'lease'], ['extend', 2, 'job count'],
  ];
  // "" means "keep" / "the consumer's default" for these two, so it is legal there.
  const blankIsLegal = (name: string, i: number) => name === 'enqueue' && (i === 3 || i === 8);
  it.each(numeric)('%s, ARGV index %d (0-based: the %s): every garbage form is EMQ_BAD_ARG, nothing written', async (name, i) => {
    const s = await seed();
    const call = await calls[name as keyof typeof calls](s);
    for (const g of garbage.filter((x) => x !== '' || !blankIsLegal(name, i))) {
      await refusedUnchanged(raw, s.q, 'EMQ_BAD_ARG', () => run(name, call, { [i]: g }));
    }
  });

  it('claim with lease "NaN" leaves pending, active, the rows and meta.token untouched', async () => {
    const s = await seed();
    const read = async () => ({
      pending: await raw.lrange(s.k.pending, 0, -1),
      active: await raw.zrange(s.k.active, 0, -1, 'WITHSCORES'),
      scheduled: await raw.zrange(s.k.scheduled, 0, -1, 'WITHSCORES'),
      row: await raw.hgetall(s.k.job(s.next)),
      token: await raw.hget(s.k.meta, 'token'),
    });
    const { keys } = await calls.claim(s);
    const before = await read();
    expect(await codeOf(() => run('claim', { keys, args: [PROTOCOL_VERSION, '1', 'NaN', '1000'] }))).toBe('EMQ_BAD_ARG');
    expect(await read()).toEqual(before);
    expect(before.pending).toHaveLength(3);
  });
});

describe('out of range', () => {
  const cases: [ScriptName, string, Record<number, string | number>][] = [
    ['enqueue', 'max attempts 1001', { 8: '1001' }], ['enqueue', 'max attempts 9999', { 8: '9999' }],
    ['enqueue', 'a delay over 10 years (315360000000 ms)', { 6: '315360000001' }], ['enqueue', 'a run-at after 2200-01-01', { 7: '7258118400001' }],
    ['enqueue', 'a backoff over a day', { 9: 'f:86400001' }], ['enqueue', 'a backoff with 17 digits', { 9: 'e:10000000000000000' }],
    ['enqueue', 'a payload limit over 512 MiB', { 1: '536870913' }], ['enqueue', 'a lifecycle-log length over 1000000', { 3: '1000001' }],
    ['claim', 'lease 86400001', { 2: '86400001' }], ['claim', 'promote 10001', { 3: '10001' }], ['claim', 'n 1001', { 1: '1001' }],
    ['claim', 'lease -5', { 2: '-5' }], ['extend', 'lease 0', { 1: '0' }], ['extend', 'lease 86400001', { 1: '86400001' }],
    ['complete', 'keepDone 1000001', { 1: '1000001' }], ['complete', 'keepDone -1', { 1: '-1' }],
  ];
  it.each(cases)('%s with %s: EMQ_BAD_ARG, nothing written', async (name, _what, patch) => {
    const s = await seed();
    await refusedUnchanged(raw, s.q, 'EMQ_BAD_ARG', async () => run(name, await calls[name as keyof typeof calls](s), patch));
  });

  it('the edges are legal: max attempts 1000, a delay of exactly 10 years, a run-at of exactly 2200-01-01, a backoff of a day', async () => {
    const s = await seed();
    const call = await calls.enqueue(s);
    expect(await run('enqueue', call, { 8: '1000', 9: 'f:86400000', 12: '315360000000', 13: '0' })).toEqual([1, 1]);
    const t = await sent((c) => wire.enqueue(c, s.k, 1024, [wireJob(queues.mintId(), '{}', { runAtMs: 7258118400000 })]));
    expect(await run('enqueue', t)).toEqual([1]);
    expect(await raw.zscore(s.k.scheduled, String(t.args[4]))).toBe('7258118400000');
  });
});

describe('missing arguments, missing or misplaced keys', () => {
  const shapes: [string, (c: SentCall) => SentCall][] = [
    ['no ARGV at all', (c) => ({ keys: c.keys, args: [] })],
    ['only the version', (c) => ({ keys: c.keys, args: c.args.slice(0, 1) })],
    ['the last ARGV missing', (c) => ({ keys: c.keys, args: c.args.slice(0, -1) })],
    ['no KEYS at all', (c) => ({ keys: [], args: c.args })],
    ['the last key missing', (c) => ({ keys: c.keys.slice(0, -1), args: c.args })],
    ['one key too many', (c) => ({ keys: [...c.keys, c.keys[0]], args: c.args })],
    ['KEYS[2] and KEYS[3] swapped', (c) => ({ keys: [c.keys[0], c.keys[2], c.keys[1], ...c.keys.slice(3)], args: c.args })],
    ['KEYS of another queue after KEYS[1]', (c) => ({ keys: [c.keys[0], ...c.keys.slice(1).map((k) => k.replace(/^emq:\{[^}]+\}/, 'emq:{other}'))], args: c.args })],
  ];
  const names = Object.keys(calls) as (keyof typeof calls)[];
  // A built script (lua/src) checks the version before any count: a call without ARGV has no
  // version, so it is EMQ_VERSION there (a hand-written one still says EMQ_BAD_ARG).
  const noVersion = (name: string): string => (readFileSync(join(luaDir(), `${name}.lua`), 'utf8').includes('Built from lua/src/') ? 'EMQ_VERSION' : 'EMQ_BAD_ARG');
  it.each(names)('%s: each shape is EMQ_BAD_ARG (no ARGV at all: EMQ_VERSION once built), nothing written', async (name) => {
    const s = await seed();
    const call = await calls[name](s);
    for (const [what, shape] of shapes) {
      const c = shape(call);
      const got = await codeOf(() => runScript(conn.scriptClient, name, c.keys, c.args));
      expect(`${what}: ${got}`).toBe(`${what}: ${c.args.length === 0 ? noVersion(name) : 'EMQ_BAD_ARG'}`);
    }
    await refusedUnchanged(raw, s.q, noVersion(name), () => runScript(conn.scriptClient, name, [], []));
  });
});

describe('keys of the wrong type (EMQ_WRONGTYPE, nothing written)', () => {
  const rows = (s: Seed) => ({ rowA: s.k.job(s.a.id), rowNext: s.k.job(s.next), rowDue: s.k.job(s.due), rowLater: s.k.job(s.later) });
  type Named = keyof QueueKeys | keyof ReturnType<typeof rows>;
  const touched: Record<keyof typeof calls, Named[]> = {
    enqueue: ['meta', 'pending', 'scheduled', 'wake', 'data', 'opts', 'events'],
    claim: ['meta', 'pending', 'scheduled', 'active', 'wake', 'data', 'opts', 'events', 'rowNext', 'rowDue'],
    complete: ['meta', 'active', 'done', 'data', 'events', 'rowA'],
    extend: ['meta', 'active', 'rowA'],
    peek: ['meta', 'scheduled', 'data', 'opts', 'rowLater'],
  };
  const cases = (Object.keys(touched) as (keyof typeof calls)[]).flatMap((name) => touched[name].map((key) => [name, key] as const));
  it.each(cases)('%s with %s holding a string', async (name, key) => {
    const s = await seed();
    const call = await calls[name](s);
    const all: Record<string, string> = { ...(s.k as unknown as Record<string, string>), ...rows(s) };
    await raw.del(all[key]);
    await raw.set(all[key], 'not a collection');
    await refusedUnchanged(raw, s.q, 'EMQ_WRONGTYPE', () => run(name, call));
  });

  it.each([
    ['enqueue', 'pending', 'a zset'], ['claim', 'pending', 'a hash'], ['claim', 'active', 'a list'], ['complete', 'done', 'a list'],
  ] as const)('%s with %s holding %s', async (name, key, kind) => {
    const s = await seed();
    const call = await calls[name](s);
    const target = s.k[key];
    await raw.del(target);
    if (kind === 'a zset') await raw.zadd(target, 1, 'x');
    else if (kind === 'a hash') await raw.hset(target, 'x', '1');
    else await raw.rpush(target, 'x');
    await refusedUnchanged(raw, s.q, 'EMQ_WRONGTYPE', () => run(name, call));
  });
});
