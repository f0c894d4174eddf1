/**
 * The cache phases (EchoMQ vs bentocache on the same Valkey) and the suite that runs them: each
 * phase on a fresh namespace / prefix with FLUSHALL in between, repeated `reps` times with the
 * order of the two systems alternating, reduced to the median of each metric.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { CACHE_IN_FLIGHT, CACHE_METRICS, CACHE_SYSTEMS, cachePayload, cacheSizes, type BenchPayload, openCache, type CacheClient, type CacheMetric, type CacheSizes, type CacheSystem, type CacheTarget } from './cache.js';
import type { FromLagChild, LagArgs, ToLagChild } from './cache-worker.js';
import { median } from './format.js';
import { nowMs, percentile, sleep } from './common.js';
import type { Probe } from './probe.js';
import { cacheStaleness, stalenessLine, type StalenessResult } from './cache-staleness.js';

/** One cache phase's outcome for one system in one repetition. */
export interface CacheRecord {
  readonly phase: string;
  readonly system: CacheSystem;
  readonly rep: number;
  readonly values: Readonly<Partial<Record<CacheMetric, number>>>;
  readonly note?: string;
}

/** The cache part of a report: medians per system, every repetition, and the sizes. */
export interface CacheReport {
  readonly results: Readonly<Record<CacheSystem, Readonly<Record<CacheMetric, number>>>>;
  readonly records: readonly CacheRecord[];
  readonly sizes: CacheSizes;
  readonly reps: number;
  /** Installed bentocache version. */
  readonly bentocacheVersion: string;
  /** EchoMQ only: Bus event → refreshed HTTP page on another instance (`bench/cache-staleness.ts`). */
  readonly staleness?: StalenessResult;
}

type PhaseOut = Pick<CacheRecord, 'values' | 'note'>;

const target = (url: string): CacheTarget => ({ url, namespace: `bench-${randomBytes(4).toString('hex')}` });

/** Runs `op(i)` for i in 0..n-1, `CACHE_IN_FLIGHT` at a time (each batch awaited before the next); returns seconds. */
async function batched(n: number, op: (i: number) => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i += CACHE_IN_FLIGHT) {
    const batch: Promise<unknown>[] = [];
    for (let j = i; j < Math.min(n, i + CACHE_IN_FLIGHT); j++) batch.push(op(j));
    await Promise.all(batch);
  }
  return (performance.now() - t0) / 1000;
}

/** Throws unless `v` is payload `i` (a benchmark that reads the wrong thing measures nothing). */
function check(v: BenchPayload | undefined, i: number, what: string): void {
  if (v?.i !== i) throw new Error(`cache bench: ${what} returned ${JSON.stringify(v)}, expected payload ${i}`);
}

/** `get` of one hot key already in this instance's L1. */
async function l1Hits(system: CacheSystem, url: string, n: number): Promise<PhaseOut> {
  const c = await openCache(system, target(url));
  try {
    await c.set('hot', cachePayload(7));
    check(await c.get('hot'), 7, 'warm get');
    await batched(Math.min(n, 10_000), () => c.get('hot')); // untimed JIT warm-up
    let wrong = 0;
    const s = await batched(n, async () => {
      if ((await c.get('hot'))?.i !== 7) wrong++;
    });
    if (wrong > 0) throw new Error(`cache bench: ${wrong} L1 gets missed`);
    return { values: { cache_l1_hit_per_s: n / s } };
  } finally {
    await c.close();
  }
}

/** `get` of `n` distinct keys written by another instance, so this instance's L1 is cold for each. */
export async function l2Hits(system: CacheSystem, url: string, n: number): Promise<PhaseOut> {
  const t = target(url);
  const writer = await openCache(system, t);
  const reader = await openCache(system, t);
  try {
    await batched(n, (i) => writer.set(`k-${i}`, cachePayload(i)));
    await writer.set('warm', cachePayload(-1));
    check(await reader.get('warm'), -1, 'warm get'); // the reader's connections and coherence are up
    const s = await batched(n, async (i) => check(await reader.get(`k-${i}`), i, 'L2 get'));
    return { values: { cache_l2_hit_per_s: n / s } };
  } finally {
    await reader.close();
    await writer.close();
  }
}

/** `getOrLoad` / `getOrSet` of `n` distinct cold keys with a trivial synchronous loader. */
async function getOrLoad(system: CacheSystem, url: string, n: number): Promise<PhaseOut> {
  const c = await openCache(system, target(url));
  try {
    check(await c.getOrLoad('warm', () => cachePayload(-1)), -1, 'warm getOrLoad');
    let loads = 0;
    const s = await batched(n, async (i) => {
      const v = await c.getOrLoad(`k-${i}`, () => {
        loads++;
        return cachePayload(i);
      });
      check(v, i, 'getOrLoad');
    });
    if (loads !== n) throw new Error(`cache bench: ${loads} loads for ${n} cold keys`);
    return { values: { cache_get_or_load_per_s: n / s } };
  } finally {
    await c.close();
  }
}

const WORKER = fileURLToPath(new URL('./cache-worker.js', import.meta.url));
const LAG_WARMUP = 20;
/**
 * A lag round slower than this is counted in the phase's note, and among those the rounds where
 * the writer's `set` or one poll of the child (its `get` plus the tick after it) took `STALL_MS`
 * or more (each takes well under 1 ms at the median): the whole
 * path is four wake-ups across three processes (writer → Valkey → child → Valkey → child) and a
 * process woken on a busy CPU can wait for the next scheduler tick (4 ms at HZ=250), so those
 * rounds measure the machine rather than the cache.
 */
const SLOW_LAG_MS = 5;
const STALL_MS = 3;

/** Spawns the lag child and returns a function that resolves with its next message of a type. */
function spawnLagChild(args: LagArgs): { child: ChildProcess; next: <K extends FromLagChild['type']>(type: K) => Promise<Extract<FromLagChild, { type: K }>> } {
  const child = spawn(process.execPath, [WORKER, JSON.stringify(args)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const inbox: FromLagChild[] = [];
  let wake: (() => void) | undefined;
  let failed: Error | undefined;
  child.on('message', (m: FromLagChild) => {
    inbox.push(m);
    wake?.();
  });
  child.once('exit', (code) => {
    if (code !== 0) failed = new Error(`cache worker exited with code ${code}`);
    wake?.();
  });
  const next = async <K extends FromLagChild['type']>(type: K): Promise<Extract<FromLagChild, { type: K }>> => {
    const until = Date.now() + 10_000;
    for (;;) {
      const i = inbox.findIndex((m) => m.type === type);
      if (i >= 0) return inbox.splice(i, 1)[0] as Extract<FromLagChild, { type: K }>;
      if (failed) throw failed;
      if (Date.now() > until) throw new Error(`cache worker: no '${type}' within 10 s`);
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, 100).unref();
      });
    }
  };
  return { child, next };
}

/**
 * Invalidation lag between two processes: the parent `set`s value r of a hot key that the child
 * holds in L1 (value r-1) and polls; lag = the child's first sight of value r minus the instant
 * just before the parent's `set` (one machine, its monotonic clock `process.hrtime` on both sides).
 */
export async function invalidationLag(system: CacheSystem, url: string, rounds: number): Promise<PhaseOut> {
  const t = target(url);
  const key = 'hot';
  const writer: CacheClient = await openCache(system, t);
  await writer.set(key, cachePayload(0));
  const { child, next } = spawnLagChild({ system, url, namespace: t.namespace, key });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    await next('ready');
    const lags: number[] = [];
    let notInL1 = 0;
    let slow = 0;
    let stalled = 0;
    for (let r = 1; r <= LAG_WARMUP + rounds; r++) {
      child.send({ type: 'arm', expect: r } satisfies ToLagChild);
      const armed = await next('armed');
      if (!armed.l1Old) notInL1++;
      await sleep(1); // the child is in its poll loop
      const t0 = nowMs();
      await writer.set(key, cachePayload(r));
      const setMs = nowMs() - t0;
      const seen = await next('seen');
      if (r > LAG_WARMUP) {
        lags.push(seen.t - t0);
        if (seen.t - t0 > SLOW_LAG_MS) {
          slow++;
          if (setMs >= STALL_MS || seen.longestPollMs >= STALL_MS) stalled++;
        }
      }
    }
    lags.sort((a, b) => a - b);
    const notes = [
      notInL1 > 0 ? `${notInL1} rounds began without the old value in the child` : '',
      slow > 0 ? `${slow} rounds over ${SLOW_LAG_MS} ms, ${stalled} of them with one step ≥ ${STALL_MS} ms (the writer's set or one poll of the child)` : '',
    ].filter((n) => n !== '');
    const note = notes.length > 0 ? notes.join('; ') : undefined;
    return { values: { cache_invalidation_lag_p50_ms: percentile(lags, 0.5), cache_invalidation_lag_p99_ms: percentile(lags, 0.99) }, note };
  } finally {
    if (child.connected) child.send({ type: 'stop' } satisfies ToLagChild);
    await exited;
    await writer.close();
  }
}

/** One cache phase: a label and how to run it for one system. */
interface CachePhase {
  readonly label: string;
  run(system: CacheSystem, url: string): Promise<PhaseOut>;
}

function cachePhases(s: CacheSizes): CachePhase[] {
  return [
    { label: 'cache l1 hit', run: (sys, url) => l1Hits(sys, url, s.l1Hits) },
    { label: 'cache l2 hit', run: (sys, url) => l2Hits(sys, url, s.l2Hits) },
    { label: 'cache getOrLoad', run: (sys, url) => getOrLoad(sys, url, s.getOrLoad) },
    { label: 'cache invalidation', run: (sys, url) => invalidationLag(sys, url, s.lagRounds) },
  ];
}

/** Runs every cache phase for both systems `reps` times on the Valkey at `url`; returns the medians and every record. */
export async function runCacheSuite(url: string, probe: Probe, quick: boolean, reps: number, bentocacheVersion: string): Promise<CacheReport> {
  const s = cacheSizes(quick);
  const list = cachePhases(s);
  // Untimed warm-up of both systems (JIT, script cache, connections).
  for (const system of CACHE_SYSTEMS) {
    await getOrLoad(system, url, 2000);
    await l1Hits(system, url, 20_000);
    await probe.flush();
  }
  const records: CacheRecord[] = [];
  for (let rep = 0; rep < reps; rep++) {
    for (const [i, phase] of list.entries()) {
      const order: readonly CacheSystem[] = (i + rep) % 2 === 0 ? CACHE_SYSTEMS : [...CACHE_SYSTEMS].reverse();
      for (const system of order) {
        await probe.flush();
        const r = await phase.run(system, url);
        const shown = Object.entries(r.values).map(([k, v]) => `${k}=${v.toFixed(v < 100 ? 3 : 0)}`);
        console.log(`  #${rep + 1} ${phase.label.padEnd(22)} ${system.padEnd(10)} ${shown.join(' ')}${r.note ? `  (${r.note})` : ''}`);
        records.push({ phase: phase.label, system, rep, ...r });
      }
    }
  }
  const results = {} as Record<CacheSystem, Record<CacheMetric, number>>;
  for (const system of CACHE_SYSTEMS) {
    results[system] = {} as Record<CacheMetric, number>;
    for (const m of CACHE_METRICS) {
      const values = records.filter((r) => r.system === system && r.values[m] !== undefined).map((r) => r.values[m] as number);
      if (values.length === 0) throw new Error(`cache metric ${m} of ${system} was not measured`);
      results[system][m] = median(values);
    }
  }
  // EchoMQ only (no peer invalidates HTTP caches from domain events): once, after the rows.
  await probe.flush();
  const staleness = await cacheStaleness(url, s.lagRounds);
  console.log(`  staleness (EchoMQ only): ${stalenessLine(staleness)}`);
  return { results, records, sizes: s, reps, bentocacheVersion, staleness };
}
