/**
 * `node bench/dist/light-probe.js [rate] [seconds] [systems]`: where the time and the Valkey work of
 * one job go at light load (docs/bounds.md, "Light load: where the time goes"). For each system, a
 * steady `rate` of single enqueues into a running consumer of concurrency 10 (as the latency row),
 * and over the timed window:
 *
 * - every top-level command Valkey ran, from `SLOWLOG` at a 0 µs threshold (each `EVALSHA` named by
 *   its script), per job, with its µs;
 * - every command by name from `INFO commandstats` (inside scripts too), per job;
 * - the client's timeline of a job: enqueue call → its reply at the producer, → handler start;
 * - the event loop's delay (`monitorEventLoopDelay`, 1 ms resolution) and GC pauses (`gc` entries).
 *
 * A diagnostic, not a report row: one fresh Valkey, runs in sequence, printed to stdout.
 */
import { PerformanceObserver, monitorEventLoopDelay } from 'node:perf_hooks';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { Pipeline, Redis } from 'iovalkey';
import { scripts } from '@echomq/nestjs/protocol';
import { startEmbeddedValkey } from '@echomq/nestjs/testing';
import { nowMs, percentile, randomQueue, sleep, type SystemName } from './common.js';
import { makeDriver } from './drivers.js';
import { steady } from './phases.js';

interface Stamp {
  readonly t: number;
  readonly m: boolean;
  readonly i?: number;
}

const f2 = (x: number): string => x.toFixed(2);
const pct = (xs: number[], q: number): number => percentile([...xs].sort((a, b) => a - b), q);

/**
 * LP_COUNT=1 (with `--expose-gc`): after a full GC mid-window, how many iovalkey `Pipeline` objects
 * are still reachable (each parked wait builds one; more than a few means something keeps them).
 */
async function countLive(): Promise<void> {
  (globalThis as unknown as { gc?: () => void }).gc?.();
  const s = new Session();
  s.connect();
  (globalThis as unknown as { __lpPipeline: unknown }).__lpPipeline = Pipeline.prototype;
  const proto = (await s.post('Runtime.evaluate', { expression: 'globalThis.__lpPipeline' })) as { result: { objectId: string } };
  const found = (await s.post('Runtime.queryObjects', { prototypeObjectId: proto.result.objectId })) as { objects: { objectId: string } };
  const len = (await s.post('Runtime.callFunctionOn', { functionDeclaration: 'function () { return this.length; }', objectId: found.objects.objectId, returnByValue: true })) as { result: { value: number } };
  console.log(`live Pipeline objects after a full GC, mid-window: ${len.result.value}`);
  s.disconnect();
}

/** `steady` without keeping the calls' promises (LP_NORETAIN=1: what the harness itself keeps alive). */
async function paced(add: (s: Stamp) => Promise<unknown>, rate: number, count: number): Promise<void> {
  const every = 1000 / rate;
  const t0 = performance.now();
  let left = count;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  for (let k = 0; k < count; k++) {
    const wait = t0 + k * every - performance.now();
    if (wait >= 1) await sleep(wait);
    void add({ t: nowMs(), m: true }).finally(() => --left === 0 && done());
  }
  await all;
}

async function one(url: string, system: SystemName, rate: number, seconds: number): Promise<void> {
  const admin = new Redis(url);
  const shaName = new Map<string, string>();
  for (const [name, s] of scripts()) shaName.set(s.sha, name);
  const driver = makeDriver(system, url);
  const queue = randomQueue('lp');
  const n = Math.round(rate * seconds);
  const sent = new Float64Array(n);
  const replied = new Float64Array(n);
  const started = new Float64Array(n);
  let received = 0;
  const consumer = await driver.consumer(queue, 10, (payload) => {
    const at = nowMs();
    const s = payload as Stamp;
    received++;
    if (s.m && s.i !== undefined) started[s.i] = at;
  });
  await consumer.start();
  const p = await driver.producer(queue);
  await steady((s) => p.add(s), rate, Math.round(rate * 1.5), false);
  while (received < Math.round(rate * 1.5)) await sleep(1);
  await admin.config('SET', 'slowlog-log-slower-than', '0');
  await admin.config('SET', 'slowlog-max-len', '1000000');
  await admin.slowlog('RESET');
  await admin.config('RESETSTAT');
  const eld = monitorEventLoopDelay({ resolution: 1 });
  let gcMs = 0;
  let gcs = 0;
  const gcKinds = new Map<number, number>(); // perf_hooks kinds: 1 minor, 2 major, 4 incremental, 8 weak callbacks
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gcMs += e.duration;
      gcs++;
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
      gcKinds.set(kind, (gcKinds.get(kind) ?? 0) + e.duration);
    }
  });
  obs.observe({ entryTypes: ['gc'] });
  eld.enable();
  if (process.env.LP_MARK) console.log('### window start'); // (for --trace-gc-nvp output)
  // LP_FULLGC=<ms> (with --expose-gc): a full GC that often, to see whether scavenges then copy less.
  const fullGc = process.env.LP_FULLGC ? setInterval(() => (globalThis as unknown as { gc?: () => void }).gc?.(), Number(process.env.LP_FULLGC)) : undefined;
  // LP_HEAP=<file>: sample the allocations that outlive a scavenge (collected by a major GC or still live).
  const heap = process.env.LP_HEAP ? new Session() : undefined;
  if (heap) {
    heap.connect();
    await heap.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: false } as object);
  }
  const cpu0 = process.cpuUsage();
  let k = 0;
  const add = (s: Stamp): Promise<unknown> => {
    const i = k++;
    if (process.env.LP_COUNT && i === n >> 1) void countLive();
    sent[i] = s.t;
    return p.add({ ...s, i }).then((r) => ((replied[i] = nowMs()), r));
  };
  if (process.env.LP_NORETAIN) await paced(add, rate, n);
  else await steady(add, rate, n, true);
  while (received < Math.round(rate * 1.5) + n) await sleep(1);
  await sleep(20);
  const cpu = process.cpuUsage(cpu0);
  if (process.env.LP_MARK) console.log('### window end');
  if (fullGc) clearInterval(fullGc);
  if (heap) {
    const { profile } = (await heap.post('HeapProfiler.stopSampling')) as { profile: unknown };
    writeFileSync(`${process.env.LP_HEAP}-${system}.heapprofile`, JSON.stringify(profile));
    heap.disconnect();
  }
  eld.disable();
  obs.disconnect();
  await admin.config('SET', 'slowlog-log-slower-than', '10000');
  const log = (await admin.slowlog('GET', -1)) as [number, number, number, string[]][];
  const stats = (await admin.info('commandstats')).split('\n');
  // SLOWLOG holds the commands a script calls too, each logged as it ends: before its script's entry.
  const top = new Map<string, { calls: number; us: number; inner: number; innerUs: number }>();
  let inner = 0;
  let innerUs = 0;
  for (const [, , us, args] of [...log].reverse()) {
    let name = String(args[0]).toLowerCase();
    if (name === 'slowlog' || name === 'config' || name === 'info') continue;
    // (EchoMQ's and bee-queue's scripts spell commands in capitals, iovalkey and ioredis in lower case.)
    if (String(args[0]) === String(args[0]).toUpperCase() && /[A-Z]/.test(String(args[0]))) {
      inner++;
      innerUs += Number(us);
      continue;
    }
    if (name === 'evalsha') name = `evalsha ${shaName.get(String(args[1])) ?? String(args[1]).slice(0, 8)}`;
    const e = top.get(name) ?? { calls: 0, us: 0, inner: 0, innerUs: 0 };
    e.calls++;
    e.us += Number(us);
    if (name.startsWith('eval')) {
      e.inner += inner;
      e.innerUs += innerUs;
      inner = 0;
      innerUs = 0;
    }
    top.set(name, e);
  }
  console.log(`slowlog entries ${log.length}, commandstats evalsha: ${stats.find((l) => l.startsWith('cmdstat_evalsha:'))?.trim()}`);
  const load = loadavg().map((x) => x.toFixed(2)).join(' / ');
  console.log(`\n## ${system}: ${n} jobs at ${rate}/s (load ${load})`);
  console.log('\n| call the client sends (SLOWLOG) | per job | commands inside, per call | Valkey µs per call | µs per job |\n|---|---:|---:|---:|---:|');
  let calls = 0;
  let us = 0;
  for (const [name, e] of [...top].sort((a, b) => b[1].calls - a[1].calls)) {
    calls += e.calls + e.inner;
    us += e.us;
    console.log(`| \`${name}\` | ${f2(e.calls / n)} | ${f2(e.inner / e.calls)} | ${f2(e.us / e.calls)} | ${f2(e.us / n)} |`);
  }
  console.log(`| total (commands, µs) | ${f2(calls / n)} | | | ${f2(us / n)} |`);
  console.log('\n| command (commandstats, inside scripts too) | per job | µs per job |\n|---|---:|---:|');
  let all = 0;
  const rows: [string, number, number][] = [];
  for (const line of stats) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim());
    if (!m || ['slowlog', 'config', 'info'].includes(m[1])) continue;
    rows.push([m[1], Number(m[2]), Number(m[3])]);
  }
  for (const [name, c, u] of rows.sort((a, b) => b[1] - a[1])) {
    all += c;
    console.log(`| \`${name}\` | ${f2(c / n)} | ${f2(u / n)} |`);
  }
  console.log(`| total | ${f2(all / n)} | |`);
  const lat: number[] = [];
  const rep: number[] = [];
  let before = 0;
  for (let i = 0; i < n; i++) {
    lat.push(started[i] - sent[i]);
    rep.push(replied[i] - sent[i]);
    if (started[i] < replied[i]) before++;
  }
  console.log('\n| client timeline (ms from the enqueue call) | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|');
  console.log(`| enqueue reply at the producer | ${f2(pct(rep, 0.5))} | ${f2(pct(rep, 0.9))} | ${f2(pct(rep, 0.99))} | ${f2(pct(rep, 1))} |`);
  console.log(`| handler start | ${f2(pct(lat, 0.5))} | ${f2(pct(lat, 0.9))} | ${f2(pct(lat, 0.99))} | ${f2(pct(lat, 1))} |`);
  console.log(`handler started before the producer saw the reply: ${((100 * before) / n).toFixed(1)}%`);
  console.log(`event-loop delay (ms): p50 ${f2(eld.percentile(50) / 1e6)}, p99 ${f2(eld.percentile(99) / 1e6)}, max ${f2(eld.max / 1e6)}; GC ${gcs} pauses, ${f2(gcMs)} ms in ${seconds} s (${[...gcKinds].map(([k, ms]) => `kind ${k}: ${f2(ms)} ms`).join(', ')}); client CPU ${f2((cpu.user + cpu.system) / n)} µs/job`);
  await p.close();
  await consumer.close();
  await driver.close();
  await admin.flushall();
  admin.disconnect();
}

async function main(): Promise<void> {
  const rate = Number(process.argv[2] ?? 500);
  const seconds = Number(process.argv[3] ?? 4);
  const systems = (process.argv[4] ?? 'echomq,beequeue').split(',') as SystemName[];
  const v = await startEmbeddedValkey();
  try {
    for (const s of systems) await one(v.url, s, rate, seconds);
  } finally {
    await v.stop();
  }
}

await main();
