/**
 * Where EchoMQ's cache invalidation lag goes: the bench's lag phase (`invalidationLag` in
 * `cache-phases.ts`: a parent `set`s a hot key a child holds in L1 while the child polls `get` in a
 * tight `setImmediate` loop) with the child's steps stamped on the machine's monotonic clock:
 * the signal's arrival (`Coherence.signalled`), the L1 drop, the poll that missed L1 (its L2 read
 * leaving) and the new value seen. EchoMQ only; a probe, not a bench row.
 *
 *   node dist/scripts/with-valkey.js node bench/dist/cache-lag-probe.js [rounds] [runs] [echomq,raw] [--quiet]
 *
 * Prints each run's percentiles of every part, and the slow rounds with their parts. `raw` is the
 * floor of the same path shape, hand-written on iovalkey: the writer pipelines `SET` + `SPUBLISH`,
 * the child drops its copy on the message and `GET`s the key (two hops, as EchoMQ's `set` →
 * signal → L2 read); systems alternate within each run.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Redis } from 'iovalkey';
import { CacheService } from '@echomq/nestjs';
import { CacheKeys, EchoMqConnection, PROTOCOL_VERSION, scripts } from '@echomq/nestjs/protocol';
import { cachePayload, type BenchPayload } from './cache.js';
import { nowMs, percentile, sleep } from './common.js';

/** The child's stamps of one round (ms, monotonic clock); 0 = did not happen. */
interface Stamps {
  readonly sig: number;
  readonly drop: number;
  readonly miss: number;
  readonly seen: number;
  /** GC pauses in the child during the round: their sum and the longest (ms). */
  readonly gcMs?: number;
  readonly gcMaxMs?: number;
  /** The subscriber's raw message event (before decoding); the L2 read's EVALSHA call. */
  readonly wire?: number;
  readonly sent?: number;
  readonly polls: number;
  readonly longestPollMs: number;
}

type ToChild = { type: 'arm'; expect: number } | { type: 'stop' };
type FromChild = { type: 'ready' } | { type: 'armed' } | ({ type: 'seen' } & Stamps);

const url = (): string => process.env.ECHOMQ_TEST_URL ?? 'redis://127.0.0.1:6379';

async function open(ns: string): Promise<{ conn: EchoMqConnection; cache: CacheService }> {
  const conn = new EchoMqConnection({ url: url() });
  await conn.open();
  return { conn, cache: new CacheService(conn, { namespace: ns, ttlMs: 600_000, l1MaxEntries: 10_000 }) };
}

/** The floor of the same path, hand-written: the writer pipelines `SET` + `SPUBLISH`; the child drops its copy on the message and `GET`s. */
interface Side {
  get(key: string): Promise<BenchPayload | undefined>;
  set(key: string, v: BenchPayload): Promise<void>;
  close(): Promise<void>;
}

/**
 * The child side of a hand-written floor: one local copy, dropped on every message of `channel`
 * (after `onSignal`), refilled from Valkey by `read` (the JSON text, or null) on the next `get`.
 */
async function droppedOnSignal(sub: Redis, channel: string, onSignal: () => void, read: (key: string) => Promise<string | null>): Promise<Side['get']> {
  await sub.ssubscribe(channel);
  let local: BenchPayload | undefined;
  sub.on('smessage', () => {
    onSignal();
    local = undefined;
  });
  return async (key) => {
    if (local) return local;
    const s = await read(key);
    local = s === null ? undefined : (JSON.parse(s) as BenchPayload);
    return local;
  };
}

async function openRaw(ns: string, onSignal: () => void): Promise<Side> {
  const c = new Redis(url());
  const sub = new Redis(url());
  const ch = `raw:{${ns}}:signal`;
  return {
    get: await droppedOnSignal(sub, ch, onSignal, (key) => c.get(`raw:{${ns}}:${key}`)),
    set: async (key, v) => {
      await c.pipeline().set(`raw:{${ns}}:${key}`, JSON.stringify(v)).spublish(ch, JSON.stringify({ k: [key] })).exec();
    },
    close: async () => {
      sub.disconnect();
      c.disconnect();
    },
  };
}

/**
 * The same floor with EchoMQ's scripts: the writer pipelines `cache-set.lua` + `cache-announce.lua`
 * (EVALSHA, a real `ver` id), the child drops its copy on the real signal and reads the entry's
 * `d` with `HGET`: Valkey's share of EchoMQ's path, without its JavaScript.
 */
async function openRawLua(ns: string, onSignal: () => void): Promise<Side> {
  const conn = new EchoMqConnection({ url: url() });
  await conn.open();
  const c = new Redis(url());
  const sub = new Redis(url());
  const k = new CacheKeys(ns);
  const all = scripts();
  for (const name of ['cache-set', 'cache-announce'] as const) await c.script('LOAD', all.get(name)!.source);
  return {
    get: await droppedOnSignal(sub, k.signal, onSignal, (key) => c.hget(k.entry(key), 'd')),
    set: async (key, v) => {
      const ver = conn.ids.next('ver');
      await c
        .pipeline()
        .evalsha(all.get('cache-set')!.sha, 1, k.entry(key), PROTOCOL_VERSION, ver, JSON.stringify(v), 600_000, 524_288, '', 0)
        .evalsha(all.get('cache-announce')!.sha, 2, k.log, k.signal, PROTOCOL_VERSION, 10_000, ver, key)
        .exec();
    },
    close: async () => {
      sub.disconnect();
      c.disconnect();
      await conn.close();
    },
  };
}

/** GC pauses of this process since the last `take()`. */
const gc = (() => {
  let sum = 0;
  let max = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      sum += e.duration;
      max = Math.max(max, e.duration);
    }
  }).observe({ entryTypes: ['gc'] });
  return {
    take: (): { gcMs: number; gcMaxMs: number } => {
      const r = { gcMs: sum, gcMaxMs: max };
      sum = max = 0;
      return r;
    },
  };
})();

async function child(ns: string, key: string, system: string): Promise<void> {
  if (system === 'raw' || system === 'rawlua') return rawChild(ns, key, system);
  const { conn, cache } = await open(ns);
  const send = (m: FromChild): Promise<void> => new Promise((r) => process.send?.(m, undefined, undefined, () => r()));
  let sig = 0;
  let drop = 0;
  let miss = 0;
  let wire = 0;
  let sent = 0;
  // Stamp the signal's arrival and the L1 drop (instance overrides of internal members).
  const coh = (cache as unknown as { coherence: { signalled(ns: string, m: unknown): void } }).coherence;
  const signalled = coh.signalled.bind(coh);
  coh.signalled = (n: string, m: unknown): void => {
    if (sig === 0) sig = nowMs();
    signalled(n, m);
  };
  const l1 = cache.l1 as unknown as { applyInvalidation(ns: string, key: string, ver: string): void; get(ns: string, key: string): unknown };
  const apply = l1.applyInvalidation.bind(l1);
  l1.applyInvalidation = (n, k, v): void => {
    apply(n, k, v);
    if (drop === 0) drop = nowMs();
  };
  while ((await cache.get<BenchPayload>(key))?.i !== 0) await new Promise((r) => setImmediate(r));
  // The subscriber's raw message, before the hub decodes it; the L2 read's EVALSHA leaving.
  const hub = (coh as unknown as { hub: { opened: Map<string, { prependListener(e: string, f: () => void): void }> } }).hub;
  hub.opened.get('')?.prependListener('smessage', () => {
    if (wire === 0) wire = nowMs();
  });
  const client = conn.client as unknown as { evalsha(...a: unknown[]): Promise<unknown> };
  const evalsha = client.evalsha.bind(client);
  client.evalsha = (...a: unknown[]) => {
    if (sent === 0 && drop !== 0) sent = nowMs();
    return evalsha(...a);
  };
  process.on('message', (m: ToChild) => {
    if (m.type === 'stop') {
      void cache.close().then(() => process.exit(0));
      return;
    }
    void (async () => {
      await cache.get(key);
      sig = drop = miss = wire = sent = 0;
      gc.take();
      await send({ type: 'armed' });
      let polls = 0;
      let longestPollMs = 0;
      let last = nowMs();
      for (;;) {
        polls++;
        const before = nowMs();
        if (miss === 0 && l1.get(ns, key) === undefined) miss = before;
        const v = await cache.get<BenchPayload>(key);
        const t = nowMs();
        longestPollMs = Math.max(longestPollMs, t - last);
        last = t;
        if (v?.i === m.expect) {
          await new Promise((r) => setImmediate(r)); // the observer's entries of this round
          await send({ type: 'seen', sig, drop, miss, wire, sent, seen: t, polls, longestPollMs, ...gc.take() });
          return;
        }
        await new Promise((r) => setImmediate(r));
      }
    })();
  });
  await send({ type: 'ready' });
}

async function rawChild(ns: string, key: string, system: string): Promise<void> {
  let sig = 0;
  const stamp = (): void => {
    if (sig === 0) sig = nowMs();
  };
  const side = system === 'raw' ? await openRaw(ns, stamp) : await openRawLua(ns, stamp);
  const send = (m: FromChild): Promise<void> => new Promise((r) => process.send?.(m, undefined, undefined, () => r()));
  while ((await side.get(key))?.i !== 0) await new Promise((r) => setImmediate(r));
  process.on('message', (m: ToChild) => {
    if (m.type === 'stop') {
      void side.close().then(() => process.exit(0));
      return;
    }
    void (async () => {
      await side.get(key);
      sig = 0;
      gc.take();
      await send({ type: 'armed' });
      let polls = 0;
      let longestPollMs = 0;
      let last = nowMs();
      for (;;) {
        polls++;
        const v = await side.get(key);
        const t = nowMs();
        longestPollMs = Math.max(longestPollMs, t - last);
        last = t;
        if (v?.i === m.expect) {
          await new Promise((r) => setImmediate(r));
          await send({ type: 'seen', sig, drop: sig, miss: sig, seen: t, polls, longestPollMs, ...gc.take() });
          return;
        }
        await new Promise((r) => setImmediate(r));
      }
    })();
  });
  await send({ type: 'ready' });
}

let execAt = 0;

interface Round extends Stamps {
  readonly execAt: number;
  readonly t0: number;
  readonly setMs: number;
}

async function run(rounds: number, system: string): Promise<Round[]> {
  const ns = `probe-${randomBytes(4).toString('hex')}`;
  const key = 'hot';
  let writer: Side;
  if (system === 'raw') writer = await openRaw(ns, () => undefined);
  else if (system === 'rawlua') writer = await openRawLua(ns, () => undefined);
  else {
    const { conn, cache } = await open(ns);
    const c = conn.client as unknown as { pipeline(): { exec(): Promise<unknown> } };
    const pipeline = c.pipeline.bind(c);
    c.pipeline = () => {
      const p = pipeline();
      const exec = p.exec.bind(p);
      p.exec = () => {
        if (execAt === 0) execAt = nowMs();
        return exec();
      };
      return p;
    };
    writer = { get: (k) => cache.get<BenchPayload>(k), set: (k, v) => cache.set(k, v), close: async () => (await cache.close(), await conn.close()) };
  }
  const cache = writer;
  await cache.set(key, cachePayload(0));
  const proc = spawn(process.execPath, [fileURLToPath(import.meta.url), 'child', ns, key, system], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const inbox: FromChild[] = [];
  let wake: (() => void) | undefined;
  proc.on('message', (m: FromChild) => {
    inbox.push(m);
    wake?.();
  });
  const next = async (type: FromChild['type']): Promise<FromChild> => {
    for (;;) {
      const i = inbox.findIndex((m) => m.type === type);
      if (i >= 0) return inbox.splice(i, 1)[0];
      await new Promise<void>((r) => (wake = r));
    }
  };
  await next('ready');
  const out: Round[] = [];
  execAt = 0;
  for (let r = 1; r <= 20 + rounds; r++) {
    proc.send({ type: 'arm', expect: r } satisfies ToChild);
    await next('armed');
    await sleep(1);
    execAt = 0;
    const t0 = nowMs();
    await cache.set(key, cachePayload(r));
    const setMs = nowMs() - t0;
    const s = (await next('seen')) as Stamps;
    if (r > 20) out.push({ ...s, t0, setMs, execAt });
  }
  proc.send({ type: 'stop' } satisfies ToChild);
  await new Promise((r) => proc.once('exit', r));
  await cache.close();
  return out;
}

const fmt = (x: number): string => x.toFixed(2).padStart(6);

async function main(): Promise<void> {
  if (process.argv[2] === 'child') return child(process.argv[3], process.argv[4], process.argv[5]);
  const rounds = Number(process.argv[2] ?? 200);
  const runs = Number(process.argv[3] ?? 1);
  const systems = (process.argv[4] ?? 'echomq').split(',');
  const quiet = process.argv.includes('--quiet');
  for (let i = 0; i < runs; i++) for (const system of i % 2 === 0 ? systems : [...systems].reverse()) {
    const load = loadavg()[0].toFixed(2);
    const rs = await run(rounds, system);
    const parts: Record<string, number[]> = { total: [], 'set→exec': [], 'exec→wire': [], 'wire→sig': [], 'drop→sent': [], 'sent→seen': [], 'set→sig': [], 'sig→drop': [], 'drop→miss': [], 'miss→seen': [], 'set (writer)': [], 'longest poll': [] };
    for (const r of rs) {
      parts.total.push(r.seen - r.t0);
      if (r.execAt) parts['set→exec'].push(r.execAt - r.t0);
      if (r.execAt && r.wire) parts['exec→wire'].push(r.wire - r.execAt);
      if (r.wire && r.sig) parts['wire→sig'].push(r.sig - r.wire);
      if (r.sent && r.drop) parts['drop→sent'].push(r.sent - r.drop);
      if (r.sent) parts['sent→seen'].push(r.seen - r.sent);
      if (r.sig) parts['set→sig'].push(r.sig - r.t0);
      if (r.sig && r.drop) parts['sig→drop'].push(r.drop - r.sig);
      if (r.drop && r.miss) parts['drop→miss'].push(r.miss - r.drop);
      if (r.miss) parts['miss→seen'].push(r.seen - r.miss);
      parts['set (writer)'].push(r.setMs);
      parts['longest poll'].push(r.longestPollMs);
    }
    console.log(`run ${i + 1} ${system}: ${rs.length} rounds, load ${load}`);
    for (const [name, xs] of Object.entries(parts)) {
      xs.sort((a, b) => a - b);
      console.log(`  ${name.padEnd(14)} n=${String(xs.length).padStart(4)} p50 ${fmt(percentile(xs, 0.5))} p90 ${fmt(percentile(xs, 0.9))} p99 ${fmt(percentile(xs, 0.99))} max ${fmt(xs[xs.length - 1] ?? NaN)}`);
    }
    const over = rs.filter((r) => r.seen - r.t0 > 5);
    const gcd = rs.map((r) => r.gcMaxMs ?? 0).sort((a, b) => a - b);
    console.log(
      `  child GC: longest pause per round p50 ${fmt(percentile(gcd, 0.5))} p99 ${fmt(percentile(gcd, 0.99))} max ${fmt(gcd[gcd.length - 1])};` +
        ` ${over.length} rounds over 5 ms, ${over.filter((r) => (r.gcMaxMs ?? 0) >= 1).length} of them with a child GC pause ≥ 1 ms`,
    );
    const slow = quiet ? [] : over;
    for (const r of slow) {
      const d = (a: number, b: number): string => (a && b ? fmt(b - a) : '     -');
      console.log(`  slow ${fmt(r.seen - r.t0)}: set ${fmt(r.setMs)} set→sig ${d(r.t0, r.sig)} sig→drop ${d(r.sig, r.drop)} drop→miss ${d(r.drop, r.miss)} miss→seen ${d(r.miss, r.seen)} polls ${r.polls} longest ${fmt(r.longestPollMs)} gc ${fmt(r.gcMaxMs ?? 0)}`);
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
