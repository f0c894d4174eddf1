/**
 * `node bench/dist/crit-probe.js [rate] [seconds] [systems]`: the critical path of one job at light
 * load (docs/bounds.md, "The critical path at 500/s"). As `light-probe`: a steady `rate` of single
 * enqueues into a running consumer of concurrency 10 in the same process, after 1.5 s of warm-up.
 * Every socket write and `data` event of the process is stamped (`net.Socket` patched), and for
 * each job: the enqueue call, the first socket write after it (the producer's request), the first
 * `data` event after that on another socket (the consumer's wake-up), the handler's start. Also the
 * Valkey µs of `EVALSHA`/`EVAL` per job from `INFO commandstats` over the window (no slow log).
 */
import { Socket } from 'node:net';
import { loadavg } from 'node:os';
import { Redis } from 'iovalkey';
import { startEmbeddedValkey } from '@echomq/nestjs/testing';
import { queueKeys } from '@echomq/nestjs/protocol';
import { nowMs, percentile, randomQueue, sleep, type SystemName } from './common.js';
import { makeDriver } from './drivers.js';
import { steady } from './phases.js';

interface Probe {
  /** The job being timed (index), or -1. */
  job: number;
  write: Float64Array;
  writeSock: (Socket | undefined)[];
  data: Float64Array;
  /** The first `data` event on the writing socket (the producer's reply). */
  reply: Float64Array;
}

const probe: Probe = { job: -1, write: new Float64Array(0), writeSock: [], data: new Float64Array(0), reply: new Float64Array(0) };

/** Patches `Socket` so that writes and `data` events stamp the job being timed. */
function patchSockets(): void {
  // CP_NOCORK=1: `cork` does nothing, so a parked wait's commands go in one write each (as before 781ba34).
  if (process.env.CP_NOCORK) Socket.prototype.cork = () => undefined;
  const write = Socket.prototype.write;
  Socket.prototype.write = function (this: Socket, ...args: unknown[]): boolean {
    const j = probe.job;
    if (j >= 0 && probe.write[j] === 0) {
      probe.write[j] = performance.now();
      probe.writeSock[j] = this;
    }
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as typeof Socket.prototype.write;
  const emit = Socket.prototype.emit;
  Socket.prototype.emit = function (this: Socket, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'data') {
      const j = probe.job;
      if (j >= 0 && probe.write[j] > 0 && probe.data[j] === 0 && probe.writeSock[j] !== this) probe.data[j] = performance.now();
      if (j >= 0 && probe.write[j] > 0 && probe.reply[j] === 0 && probe.writeSock[j] === this) probe.reply[j] = performance.now();
    }
    return (emit as (e: string | symbol, ...a: unknown[]) => boolean).call(this, event, ...args);
  } as typeof Socket.prototype.emit;
}

async function scriptUsec(admin: Redis): Promise<{ calls: number; usec: number }> {
  const info = await admin.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const m of info.matchAll(/cmdstat_(evalsha|eval|evalsha_ro):calls=(\d+),usec=(\d+)/g)) {
    calls += Number(m[2]);
    usec += Number(m[3]);
  }
  return { calls, usec };
}

/** Valkey's `total_reads_processed` (socket reads, all clients). */
async function reads(admin: Redis): Promise<number> {
  return Number(/total_reads_processed:(\d+)/.exec(await admin.info('stats'))?.[1] ?? 0);
}

const f = (x: number): string => x.toFixed(0);
const pct = (xs: number[], q: number): number => percentile([...xs].sort((a, b) => a - b), q);

async function one(url: string, system: SystemName, rate: number, seconds: number): Promise<void> {
  const admin = new Redis(url);
  const driver = makeDriver(system, url);
  const queue = randomQueue('cp');
  const n = Math.round(rate * seconds);
  const call = new Float64Array(n);
  const started = new Float64Array(n);
  probe.write = new Float64Array(n);
  probe.data = new Float64Array(n);
  probe.reply = new Float64Array(n);
  probe.writeSock = new Array<Socket | undefined>(n);
  let received = 0;
  const consumer = await driver.consumer(queue, 10, (payload) => {
    const at = performance.now();
    received++;
    const i = (payload as { i?: number }).i;
    if (i !== undefined && i >= 0) {
      started[i] = at;

    }
  });
  await consumer.start();
  const p = await driver.producer(queue);
  const warm = Math.round(rate * 1.5);
  await steady(() => p.add({ i: -1 }), rate, warm, false);
  while (received < warm) await sleep(1);
  await admin.config('RESETSTAT');
  const s0 = await scriptUsec(admin);
  const r0 = await reads(admin);
  const cpu0 = process.cpuUsage();
  let k = 0;
  await steady(() => {
    const i = k++;
    probe.job = i;
    call[i] = performance.now();
    return p.add({ i });
  }, rate, n, true);
  while (received < warm + n) await sleep(1);
  const cpu = process.cpuUsage(cpu0);
  const s1 = await scriptUsec(admin);
  const r1 = await reads(admin);
  probe.job = -1;
  const w: number[] = [];
  const v: number[] = [];
  const h: number[] = [];
  const all: number[] = [];
  const r: number[] = [];
  for (let i = 0; i < n; i++) {
    if (probe.write[i] === 0 || probe.data[i] === 0 || probe.data[i] > started[i]) continue;
    w.push((probe.write[i] - call[i]) * 1000);
    v.push((probe.data[i] - probe.write[i]) * 1000);
    h.push((started[i] - probe.data[i]) * 1000);
    all.push((started[i] - call[i]) * 1000);
    if (probe.reply[i] > 0) r.push((probe.reply[i] - probe.write[i]) * 1000);
  }
  const row = (name: string, xs: number[]): string => `| ${name} | ${f(pct(xs, 0.5))} | ${f(pct(xs, 0.9))} | ${f(pct(xs, 0.99))} |`;
  console.log(`\n## ${system}${process.env.CP_NOCORK ? ' (no cork)' : ''} (${n} jobs, ${w.length} stamped; load ${loadavg()[0].toFixed(2)})\n`);
  console.log('| µs | p50 | p90 | p99 |\n|---|---:|---:|---:|');
  console.log(row('enqueue call → producer socket write', w));
  console.log(row('write → consumer socket data (Valkey + network)', v));
  console.log(row('consumer data → handler start', h));
  console.log(row('(write → the producer\'s reply data)', r));
  console.log(row('enqueue call → handler start', all));
  console.log(`script calls per job ${((s1.calls - s0.calls - 1) / n).toFixed(2)}, script µs per job ${((s1.usec - s0.usec) / n).toFixed(1)}; client CPU µs per job ${f((cpu.user + cpu.system) / n)}; Valkey socket reads per job ${((r1 - r0 - 3) / n).toFixed(2)}`);
  await p.close();
  await consumer.close();
  await admin.quit();
  void nowMs;
}

/**
 * Valkey µs of one enqueue call (`INFO commandstats`), `n` sequential single enqueues: plain (no
 * consumer), and leased to a parked registration made by hand before each (`ZADD parked`, the
 * inbox emptied; nothing pops it), so the window holds the enqueue's script calls only.
 */
async function enqueueUsec(url: string, n: number): Promise<void> {
  const admin = new Redis(url);
  const driver = makeDriver('echomq', url);
  for (const parked of [false, true, false, true]) {
    const queue = randomQueue('cv');
    const k = queueKeys(queue);
    const p = await driver.producer(queue);
    await p.add({ i: -1 });
    let usec = 0;
    let calls = 0;
    for (let i = 0; i < n; i++) {
      if (parked) {
        await admin.zadd(k.parked, Date.now() + 60_000, '30000:probeTag');
        await admin.del(k.inbox('probeTag'), k.pending);
      }
      const s0 = await scriptUsec(admin);
      await p.add({ i });
      const s1 = await scriptUsec(admin);
      usec += s1.usec - s0.usec;
      calls += s1.calls - s0.calls;
    }
    const leased = parked ? await admin.zcard(k.active) : 0;
    console.log(`enqueue ${parked ? `to a parked registration (${leased} leased)` : 'plain'}: ${(usec / calls).toFixed(1)} µs a call (${calls} calls)`);
    await p.close();
  }
  await admin.quit();
}

/**
 * The Valkey µs of the enqueue as it runs into a live parked consumer: `n` jobs one at a time, an
 * `INFO commandstats` just before each add and one sent from its handler (ahead of the consumer's
 * next call, which goes after the handler), so each window holds the enqueue only.
 */
async function liveUsec(url: string, n: number): Promise<void> {
  const admin = new Redis(url);
  const driver = makeDriver('echomq', url);
  const queue = randomQueue('cl');
  let after: Promise<{ calls: number; usec: number }> | undefined;
  let started: () => void = () => undefined;
  const consumer = await driver.consumer(queue, 10, () => {
    after = scriptUsec(admin);
    started();
  });
  await consumer.start();
  const p = await driver.producer(queue);
  const per: number[] = [];
  for (let i = 0; i < n; i++) {
    await sleep(2);
    const s0 = await scriptUsec(admin);
    const ran = new Promise<void>((r) => (started = r));
    void p.add({ i });
    await ran;
    const s1 = await after!;
    if (s1.calls - s0.calls === 1) per.push(s1.usec - s0.usec);
  }
  console.log(`enqueue into a live parked consumer: ${f(pct(per, 0.5))} µs p50, ${f(pct(per, 0.9))} p90 (${per.length} of ${n} windows with one call)`);
  await p.close();
  await consumer.close();
  await admin.quit();
}

async function main(): Promise<void> {
  if (process.argv[2] === 'live') {
    const valkey = await startEmbeddedValkey();
    await liveUsec(valkey.url, Number(process.argv[3] ?? 500)).finally(() => valkey.stop());
    return;
  }
  if (process.argv[2] === 'usec') {
    const valkey = await startEmbeddedValkey();
    await enqueueUsec(valkey.url, Number(process.argv[3] ?? 1000)).finally(() => valkey.stop());
    return;
  }
  const [rate = '500', seconds = '4', systems = 'echomq,beequeue'] = process.argv.slice(2);
  patchSockets();
  const valkey = await startEmbeddedValkey();
  try {
    for (const s of systems.split(',')) await one(valkey.url, s as SystemName, Number(rate), Number(seconds));
  } finally {
    await valkey.stop();
  }
}

void main().then(() => process.exit(0), (err: unknown) => {
  console.error(err);
  process.exit(1);
});
