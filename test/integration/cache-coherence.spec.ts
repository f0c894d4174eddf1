import { performance } from 'node:perf_hooks';
import type { Redis } from 'iovalkey';
import { Coherence, HINT_READ_DELAY_MS, type L1Target } from '../../src/cache/coherence/coherence.js';
import { EchoMqError, type EchoMqErrorCode, InvalidIdError, InvalidNameError, VersionMismatchError } from '../../src/core/errors.js';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { CacheKeys } from '../../src/core/keys.js';
import { PROTOCOL_VERSION, runScript } from '../../src/core/scripts.js';
import { eventually, openConnection, randomQueue, rawClient } from '../helpers/valkey.js';

/** An in-process L1 that records what coherence asks of it. */
class RecordingL1 implements L1Target {
  readonly applied: { ns: string; key: string; ver: string; at: number }[] = [];
  readonly drops: string[] = [];
  private readonly waiters = new Map<string, () => void>();
  applyInvalidation(ns: string, key: string, ver: string): void {
    this.applied.push({ ns, key, ver, at: performance.now() });
    this.waiters.get(key)?.();
  }
  dropNamespace(ns: string): void {
    this.drops.push(ns);
  }
  keys(): string[] {
    return this.applied.map((a) => a.key);
  }
  /** Resolves to the instant `key` is applied. */
  when(key: string): Promise<number> {
    return new Promise((resolve) => this.waiters.set(key, () => resolve(performance.now())));
  }
}

/** What an L1 was asked to apply, each (ns, key, ver) once, in first-seen order. */
const distinct = (l1: RecordingL1): [string, string, string][] =>
  [...new Set(l1.applied.map(({ ns, key, ver }) => JSON.stringify([ns, key, ver])))].map((s) => JSON.parse(s) as [string, string, string]);

/** A node whose signal path is cut: it only learns from polling. */
class DeafCoherence extends Coherence {
  protected override signalled(): void {}
}

let raw: Redis, connA: EchoMqConnection, connB: EchoMqConnection;
const open: Coherence[] = [];
beforeAll(async () => {
  raw = rawClient();
  [connA, connB] = await Promise.all([openConnection(), openConnection()]);
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
  if (connB.client.status === 'end') await connB.client.connect();
});
afterAll(async () => {
  await Promise.all([connA.close(), connB.close(), raw.quit()]);
});

const track = <T extends Coherence>(c: T): T => {
  open.push(c);
  return c;
};
const ver = (): string => connA.ids.next('ver');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** CLIENT LIST ids of connections holding a sharded subscription. */
async function subscriberIds(): Promise<string[]> {
  const list = (await raw.call('CLIENT', 'LIST')) as string;
  return list.split('\n').filter((l) => / ssub=[1-9]/.test(l)).map((l) => /id=(\d+)/.exec(l)![1]);
}

/** Resolves once `n` connections subscribe to the namespace's signal channel. */
async function subscribed(ns: string, n: number): Promise<void> {
  const count = async (): Promise<number> => Number(((await raw.call('PUBSUB', 'SHARDNUMSUB', new CacheKeys(ns).signal)) as [string, number])[1]);
  await eventually(async () => (await count()) === n, 3000, `${n} subscriptions`);
}

describe('coherence: the log, the signal, the position', () => {
  it('applies an announcement on another node via the signal; the announcer applies its own; nothing is replayed at start', async () => {
    const ns = randomQueue('cns');
    const a = track(new Coherence(connA, new RecordingL1()));
    const before = await a.announce(ns, ['old'], ver());
    const l1 = new RecordingL1();
    const b = track(new Coherence(connB, l1, 60_000)); // no poll within the test: only the signal
    const l1a = new RecordingL1();
    const a2 = track(new Coherence(connA, l1a, 60_000));
    await Promise.all([b.watching(ns), a2.watching(ns)]);
    await subscribed(ns, 2);
    const v = ver();
    const id = await a2.announce(ns, ['user:1', 'user:2'], v);
    expect(id > before).toBe(true);
    await eventually(() => l1.applied.length >= 2, 3000, 'B applies via the signal');
    await b.sync(); // the signal's early drop, then the log read: the same two, in order
    expect(distinct(l1)).toEqual([[ns, 'user:1', v], [ns, 'user:2', v]]);
    await eventually(() => l1a.applied.length >= 2, 3000, 'A applies its own');
    expect(l1.keys()).not.toContain('old');
    // The entry format: one entry per call, `v <ver> k <key> k <key>`.
    const entries = (await raw.xrange(new CacheKeys(ns).log, id, id)) as [string, string[]][];
    expect(entries).toEqual([[id, ['v', v, 'k', 'user:1', 'k', 'user:2']]]);
  });

  it('without signals a node still applies within pollMs; after a disconnect it replays what it missed, in order', async () => {
    const ns = randomQueue('cns');
    const a = track(new Coherence(connA, new RecordingL1(), 60_000));
    const l1 = new RecordingL1();
    const b = track(new DeafCoherence(connB, l1, 200));
    await b.watching(ns);
    await a.announce(ns, ['p1'], ver());
    await eventually(() => l1.applied.length === 1, 3000, 'B applies by polling');

    connB.client.disconnect(); // B's command connection is down: its polls fail
    const missed: string[] = [];
    for (let i = 0; i < 5; i++) {
      const keys = i % 2 === 0 ? [`m${i}`] : [`m${i}a`, `m${i}b`];
      missed.push(...keys);
      await a.announce(ns, keys, ver());
    }
    await sleep(600);
    expect(l1.keys()).toEqual(['p1']);
    await connB.client.connect();
    await eventually(() => l1.applied.length === 1 + missed.length, 3000, 'B replays after the reconnect');
    expect(l1.keys()).toEqual(['p1', ...missed]);
    expect(l1.drops).toEqual([]);
  });

  it('survives CLIENT KILL of its connections: the announcements are applied, in order', async () => {
    const ns = randomQueue('cns');
    const a = track(new Coherence(connA, new RecordingL1(), 60_000));
    const l1 = new RecordingL1();
    const b = track(new Coherence(connB, l1, 300));
    await b.watching(ns);
    await eventually(async () => (await subscriberIds()).length > 0, 3000, 'the subscription');
    const bId = String(await connB.client.client('ID'));
    for (const id of [bId, ...(await subscriberIds())]) await raw.call('CLIENT', 'KILL', 'ID', id);
    for (const key of ['k1', 'k2', 'k3']) await a.announce(ns, [key], ver());
    await eventually(() => l1.applied.length === 3, 5000, 'B applies after the kill');
    expect(l1.keys()).toEqual(['k1', 'k2', 'k3']);
  });

  it('drops the namespace from L1 when the log was trimmed past its position, then follows from the end', async () => {
    const ns = randomQueue('cns');
    const log = new CacheKeys(ns).log;
    const a = track(new Coherence(connA, new RecordingL1(), 60_000));
    const l1 = new RecordingL1();
    // Deaf: a signal's early drop would cover t2..t4 here; this is about the log's gap detection.
    const b = track(new DeafCoherence(connB, l1, 200));
    await b.watching(ns);
    await a.announce(ns, ['t1'], ver());
    await eventually(() => l1.applied.length === 1, 3000, 't1');

    connB.client.disconnect();
    await a.announce(ns, ['t2'], ver());
    await a.announce(ns, ['t3'], ver());
    await raw.xtrim(log, 'MAXLEN', 0);
    await a.announce(ns, ['t4'], ver());
    await connB.client.connect();
    await eventually(() => l1.drops.length === 1, 3000, 'the drop');
    expect(l1.drops).toEqual([ns]);
    expect(l1.keys()).toEqual(['t1']); // t2..t4 are covered by the drop
    await a.announce(ns, ['t5'], ver());
    await eventually(() => l1.applied.length === 2, 3000, 't5 after the jump');
    expect(l1.keys()).toEqual(['t1', 't5']);

    // A deleted log is a gap too; an approximate trim that keeps the position's successors is not.
    await raw.del(log);
    await b.sync();
    expect(l1.drops).toEqual([ns, ns]);
    await a.announce(ns, ['t6'], ver());
    await eventually(() => l1.applied.length === 3, 3000, 't6');
    expect(l1.drops).toHaveLength(2);
  });

  it('approximate MAXLEN trims never drop a node that keeps up; a node that falls behind the bound drops', async () => {
    const ns = randomQueue('cns');
    const a = track(new Coherence(connA, new RecordingL1(), 60_000, { logMaxLen: 10 }));
    const l1 = new RecordingL1();
    const b = track(new DeafCoherence(connB, l1, 60_000)); // the log alone (no early drops from signals)
    await b.watching(ns);
    for (let i = 0; i < 300; i++) {
      await a.announce(ns, [`n${i}`], ver());
      await b.sync();
    }
    expect(await raw.xlen(new CacheKeys(ns).log)).toBeLessThan(300); // the log was trimmed
    expect(l1.applied).toHaveLength(300);
    expect(l1.drops).toEqual([]);
    connB.client.disconnect();
    for (let i = 0; i < 300; i++) await a.announce(ns, [`late${i}`], ver());
    await connB.client.connect();
    await b.sync();
    expect(l1.drops).toEqual([ns]);
    expect(l1.applied).toHaveLength(300);
  });

  it('measures invalidation lag (announce → applyInvalidation on another node)', async () => {
    const ns = randomQueue('cns');
    const a = track(new Coherence(connA, new RecordingL1(), 60_000));
    const l1 = new RecordingL1();
    const b = track(new Coherence(connB, l1));
    await b.watching(ns);
    await subscribed(ns, 1);
    const lags: number[] = [];
    for (let i = 0; i < 500; i++) {
      const key = `lag:${i}`;
      const applied = l1.when(key);
      const t0 = performance.now();
      await a.announce(ns, [key], ver());
      lags.push((await applied) - t0);
    }
    lags.sort((x, y) => x - y);
    const at = (p: number): string => lags[Math.min(lags.length - 1, Math.floor(p * lags.length))].toFixed(2);
    console.log(`coherence lag over ${lags.length} announcements: p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`);
    expect(new Set(l1.keys()).size).toBe(500);
  });

  it('a signal of at most 16 keys names them: a node drops them from L1 on arrival, before its log read; larger ones carry the id only', async () => {
    const ns = randomQueue('cns');
    const k = new CacheKeys(ns);
    const sub = rawClient();
    const heard: Record<string, unknown>[] = [];
    sub.on('smessage', (_ch: string, m: string) => heard.push(JSON.parse(m) as Record<string, unknown>));
    await sub.ssubscribe(k.signal);
    const a = track(new Coherence(connA, new RecordingL1(), 60_000));
    const v = ver();
    const small = Array.from({ length: 16 }, (_, i) => `s:${i}`);
    const id1 = await a.announce(ns, small, v);
    const id2 = await a.announce(ns, Array.from({ length: 17 }, (_, i) => `b:${i}`), v);
    await eventually(() => heard.length === 2, 3000, 'both signals');
    expect(heard).toEqual([{ id: id1, v, k: small }, { id: id2 }]);
    await sub.quit();
    // A node applies what a signal names even when the log has no such entry (yet): the early drop
    // comes from the signal itself. A hint with a malformed version drops nothing.
    const l1 = new RecordingL1();
    const b = track(new Coherence(connB, l1, 60_000));
    await b.watching(ns);
    await subscribed(ns, 1);
    await raw.call('SPUBLISH', k.signal, JSON.stringify({ id: '99999999999999-0', v: 'not-a-version!', k: ['forged'] }));
    const v2 = ver();
    await raw.call('SPUBLISH', k.signal, JSON.stringify({ id: '99999999999999-1', v: v2, k: ['early:1', 7, 'early:2'] }));
    await eventually(() => l1.applied.length === 2, 3000, 'the early drop');
    expect(distinct(l1)).toEqual([[ns, 'early:1', v2], [ns, 'early:2', v2]]);
    expect(await raw.xlen(k.log)).toBe(2); // nothing of it in the log
  });
});

describe('coherence: the read a hint defers', () => {
  it('a hint that names its keys drops them at once; the log read it schedules (HINT_READ_DELAY_MS later) applies an entry whose own signal was lost', async () => {
    const ns = randomQueue('cns');
    const k = new CacheKeys(ns);
    const a = track(new Coherence(connA, new RecordingL1(), 60_000));
    const l1 = new RecordingL1();
    const b = track(new Coherence(connB, l1, 60_000)); // no poll within the test
    await b.watching(ns);
    await subscribed(ns, 1);
    // An entry in the log whose signal never went out (as if lost): only a log read finds it.
    const lost = ver();
    await raw.xadd(k.log, '*', 'v', lost, 'k', 'lost:1');
    const applied = l1.when('lost:1');
    const t0 = performance.now();
    await a.announce(ns, ['hinted:1'], ver());
    const lostAt = await applied;
    expect(lostAt - t0).toBeGreaterThanOrEqual(HINT_READ_DELAY_MS - 1);
    expect(lostAt - t0).toBeLessThan(2000);
    // The hinted key first (on arrival), then the log in order: the lost entry, the hinted one again.
    expect(distinct(l1).map(([, key]) => key)).toEqual(['hinted:1', 'lost:1']);
    expect(l1.keys().slice(0, 3)).toEqual(['hinted:1', 'lost:1', 'hinted:1']);
  });
});

describe('coherence: bad input', () => {
  it('the script refuses bad input with typed errors, writing and signalling nothing', async () => {
    const ns = randomQueue('cns');
    const k = new CacheKeys(ns);
    const sub = rawClient();
    const heard: string[] = [];
    sub.on('smessage', (_ch: string, m: string) => heard.push(m));
    await sub.ssubscribe(k.signal);
    const v = ver();
    const run = (keys: string[], args: (string | number)[]): Promise<unknown> => runScript(connA.scriptClient, 'cache-announce', keys, args);
    /** The error a call fails with (settled at once: no unhandled rejection while earlier cases are checked). */
    const fail = (keys: string[], args: (string | number)[]): Promise<unknown> => run(keys, args).then(() => undefined, (e: unknown) => e);
    const keys = [k.log, k.signal];
    const cases: [Promise<unknown>, EchoMqErrorCode, RegExp][] = [
      [fail(keys, ['3', 100, v, 'a']), 'EMQ_VERSION', /protocol/],
      [fail([k.log], [PROTOCOL_VERSION, 100, v, 'a']), 'EMQ_BAD_ARG', /2 keys/],
      [fail([k.log, new CacheKeys('other').signal], [PROTOCOL_VERSION, 100, v, 'a']), 'EMQ_BAD_ARG', /signal channel/],
      [fail(['emq:{x}:bus:log', k.signal], [PROTOCOL_VERSION, 100, v, 'a']), 'EMQ_BAD_ARG', /namespace log/],
      [fail(keys, [PROTOCOL_VERSION, 0, v, 'a']), 'EMQ_BAD_ARG', /log length/],
      [fail(keys, [PROTOCOL_VERSION, 1.5, v, 'a']), 'EMQ_BAD_ARG', /log length/],
      [fail(keys, [PROTOCOL_VERSION, 100, 'job' + v.slice(3), 'a']), 'EMQ_BAD_ID', /ver/],
      [fail(keys, [PROTOCOL_VERSION, 100, 'verzzzzzzzzzzz', 'a']), 'EMQ_BAD_ID', /ver/],
      [fail(keys, [PROTOCOL_VERSION, 100, v]), 'EMQ_BAD_ARG', /at least 4 arguments/],
      [fail(keys, [PROTOCOL_VERSION, 100, v, ...Array.from({ length: 1001 }, (_, i) => `k${i}`)]), 'EMQ_BATCH_TOO_LARGE', /1000/],
      [fail(keys, [PROTOCOL_VERSION, 100, v, 'ok', 'has space']), 'EMQ_BAD_NAME', /key 2/],
      [fail(keys, [PROTOCOL_VERSION, 100, v, 'br{ace}']), 'EMQ_BAD_NAME', /key 1/],
      [fail(keys, [PROTOCOL_VERSION, 100, v, '']), 'EMQ_BAD_NAME', /key 1/],
      [fail(keys, [PROTOCOL_VERSION, 100, v, 'x'.repeat(513)]), 'EMQ_BAD_NAME', /key 1/],
      [fail(keys, [PROTOCOL_VERSION, 100, v, 'caf\u00e9']), 'EMQ_BAD_NAME', /key 1/],
    ];
    const byCode = { EMQ_VERSION: VersionMismatchError, EMQ_BAD_ID: InvalidIdError, EMQ_BAD_NAME: InvalidNameError } as Partial<Record<EchoMqErrorCode, new (m: string) => EchoMqError>>;
    for (const [p, code, msg] of cases) {
      const err = await p;
      expect(err).toBeInstanceOf(byCode[code] ?? EchoMqError);
      expect({ code: (err as EchoMqError).code, message: (err as Error).message }).toEqual({ code, message: expect.stringMatching(msg) });
    }
    await sleep(100);
    expect(await raw.exists(k.log)).toBe(0);
    expect(heard).toEqual([]);
    // Legal edge keys pass: 512 bytes, punctuation including `|`, `~`, `%`, `]`, `-`.
    const ok = await run(keys, [PROTOCOL_VERSION, 100, v, 'x'.repeat(512), 'a|b~c%d]e-f^[g']);
    expect(String(ok)).toMatch(/^\d+-\d+$/);
    await eventually(() => heard.length === 1, 3000, 'the signal');
    expect(JSON.parse(heard[0])).toEqual({ id: ok, v, k: ['x'.repeat(512), 'a|b~c%d]e-f^[g'] });
    await sub.quit();
  });

  it('announce validates before any I/O and splits large announcements into entries of 1000 keys', async () => {
    const ns = randomQueue('cns');
    const c = track(new Coherence(connA, new RecordingL1(), 60_000));
    await expect(c.announce('bad ns', ['a'], ver())).rejects.toBeInstanceOf(InvalidNameError);
    await expect(c.announce(ns, ['a', 'b c'], ver())).rejects.toBeInstanceOf(InvalidNameError);
    await expect(c.announce(ns, ['a'], 'nope')).rejects.toBeInstanceOf(InvalidIdError);
    expect(await c.announce(ns, [], ver())).toBe('');
    expect(await raw.exists(new CacheKeys(ns).log)).toBe(0);
    await c.announce(ns, Array.from({ length: 1500 }, (_, i) => `big:${i}`), ver());
    expect(await raw.xlen(new CacheKeys(ns).log)).toBe(2);
    expect(() => new Coherence(connA, new RecordingL1(), 0)).toThrow(/pollMs/);
  });
});
