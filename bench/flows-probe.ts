/**
 * A probe of the flows row (`bench/flows.ts`, EchoMQ side): runs `n` flows of 1 parent + 10
 * children saturated (20 being created at once) and reports, per flow, the top-level commands and
 * script calls by name (seen through `MONITOR`: the round trips), and every command Valkey ran
 * including those inside scripts (`INFO commandstats` deltas), and both processes' CPU per flow.
 * `node bench/dist/flows-probe.js [n] [--no-monitor] [--slowlog] [--bullmq]` (`--slowlog`: Valkey µs
 * per flow by script; `--bullmq`: the same flows through BullMQ's FlowProducer, CPU and commands).
 */
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { Redis } from 'iovalkey';
import { FlowProducer, Worker } from 'bullmq';
import { EchoMqConnection } from '@echomq/nestjs/protocol';
import { Consumer, resolveConsumerOptions } from '@echomq/nestjs/unstable';
import { QueueService } from '@echomq/nestjs';
import { startEmbeddedValkey } from '@echomq/nestjs/testing';
import { nowMs, randomQueue } from './common.js';
import { parseInfo } from './probe.js';

const CHILDREN = 10;
const IN_FLIGHT = 20;

function scriptNames(): Map<string, string> {
  const dir = new URL('../../lua/', import.meta.url);
  const m = new Map<string, string>();
  for (const f of readdirSync(dir)) if (f.endsWith('.lua')) m.set(createHash('sha1').update(readFileSync(new URL(f, dir))).digest('hex'), f.slice(0, -4));
  return m;
}

async function stats(r: Redis): Promise<Map<string, number>> {
  const info = parseInfo((await r.info('commandstats')) as string);
  const out = new Map<string, number>();
  for (const [k, v] of info) if (k.startsWith('cmdstat_')) out.set(k.slice(8), Number(/calls=(\d+)/.exec(v)?.[1] ?? 0));
  return out;
}

/** The same flows through BullMQ's FlowProducer (as `bench/flows.ts` runs it): CPU per flow. */
async function bull(url: string, n: number, admin: Redis): Promise<void> {
  const u = new URL(url);
  const connection = { host: u.hostname, port: Number(u.port) };
  const [P, C] = [randomQueue('bflowp'), randomQueue('bflowc')];
  let done = 0;
  const removeOnComplete = { count: 1000 };
  const workers = [
    new Worker(C, async () => undefined, { connection, concurrency: 50, removeOnComplete }),
    new Worker(P, async () => void done++, { connection, concurrency: 20, removeOnComplete }),
  ];
  for (const w of workers) await w.waitUntilReady();
  const producer = new FlowProducer({ connection });
  const run = async (): Promise<number> => {
    const t0 = nowMs();
    const target = done + n;
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < n) {
          const f = next++;
          await producer.add({ name: 'p', queueName: P, data: { f }, children: Array.from({ length: CHILDREN }, (_, i) => ({ name: 'c', queueName: C, data: { f, i } })) });
        }
      }),
    );
    while (done < target) await new Promise((r) => setTimeout(r, 2));
    return nowMs() - t0;
  };
  await run();
  const vcpu = async (): Promise<number> => {
    const i = parseInfo((await admin.info('cpu')) as string);
    return (Number(i.get('used_cpu_user')) + Number(i.get('used_cpu_sys'))) * 1e6;
  };
  await admin.config('RESETSTAT');
  const cpu0 = process.cpuUsage();
  const v0 = await vcpu();
  const ms = await run();
  const v1 = await vcpu();
  const cpu = process.cpuUsage(cpu0);
  const inner = await stats(admin);
  let all = 0;
  for (const [k, v] of inner) if (k !== 'info' && k !== 'config|resetstat') all += v;
  console.log(`BullMQ: ${n} flows in ${ms.toFixed(0)} ms (${Math.round((n / ms) * 1000)} flows/s); client CPU ${((cpu.user + cpu.system) / n).toFixed(0)} µs/flow (${((cpu.user + cpu.system) / 1000 / ms).toFixed(2)} cores), Valkey CPU ${((v1 - v0) / n).toFixed(0)} µs/flow (${((v1 - v0) / 1000 / ms).toFixed(2)} cores), ${(all / n).toFixed(1)} commands/flow, ${(((inner.get('evalsha') ?? 0) + (inner.get('eval') ?? 0)) / n).toFixed(2)} script calls/flow`);
  await Promise.all(workers.map((w) => w.close()));
  await producer.close();
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 300);
  const valkey = await startEmbeddedValkey();
  const names = scriptNames();
  if (process.argv.includes('--create')) {
    // flow() alone, one at a time, no consumer: its latency is its round trips.
    const conn = new EchoMqConnection({ url: valkey.url });
    await conn.open();
    const svc = new QueueService(conn);
    const [P, C] = [randomQueue('flowp'), randomQueue('flowc')];
    const one = (f: number) => svc.flow({ queue: P, payload: { f }, children: Array.from({ length: CHILDREN }, (_, i) => ({ queue: C, payload: { f, i } })) });
    for (let i = 0; i < 300; i++) await one(i);
    const lat: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = nowMs();
      await one(i);
      lat.push(nowMs() - t);
    }
    lat.sort((a, b) => a - b);
    console.log(`flow() one at a time: p50 ${lat[Math.floor(n / 2)].toFixed(3)} ms, p99 ${lat[Math.floor(n * 0.99)].toFixed(3)} ms`);
    await svc.flows.close();
    await conn.close();
    await valkey.stop();
    return;
  }
  if (process.argv.includes('--bullmq')) {
    const admin = new Redis(valkey.url);
    try {
      await bull(valkey.url, n, admin);
    } finally {
      admin.disconnect();
      await valkey.stop();
    }
    return;
  }
  try {
    const conn = new EchoMqConnection({ url: valkey.url });
    await conn.open();
    const svc = new QueueService(conn);
    const [P, C] = [randomQueue('flowp'), randomQueue('flowc')];
    let done = 0;
    const last = new Array<number>(n).fill(0);
    const start = new Array<number>(n).fill(0);
    const consumers = [
      new Consumer(conn, {
        queue: C,
        handler: (job) => {
          const f = (job.payload as { f: number }).f;
          last[f] = Math.max(last[f], nowMs());
        },
        ...resolveConsumerOptions(svc.settings(C), { concurrency: 50 }),
        handoff: { leaseMs: svc.flows.relay.leaseMs, relay: (entries) => svc.flows.relay.relayTaken(C, entries) },
      }),
      new Consumer(conn, {
        queue: P,
        handler: (job) => {
          const f = (job.payload as { f: number }).f;
          if (f >= 0) start[f] = nowMs();
          done++;
        },
        ...resolveConsumerOptions(svc.settings(P), { concurrency: 20 }),
      }),
    ];
    for (const c of consumers) await c.start();
    const run = async (count: number, base: number): Promise<number> => {
      const t0 = nowMs();
      let next = 0;
      const target = done + count;
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next < count) {
            const f = next++;
            await svc.flow({ queue: P, payload: { f: base < 0 ? -1 : f }, children: Array.from({ length: CHILDREN }, (_, i) => ({ queue: C, payload: { f: base < 0 ? -1 : f, i } })) });
          }
        }),
      );
      const created = nowMs() - t0;
      while (done < target) await new Promise((r) => setTimeout(r, 2));
      if (base >= 0) console.log(`created in ${created.toFixed(0)} ms, all parents done at ${(nowMs() - t0).toFixed(0)} ms`);
      return nowMs() - t0;
    };
    await run(n, -1); // warm-up
    const admin = new Redis(valkey.url);
    const monConn = new Redis(valkey.url);
    const mon = await monConn.monitor();
    const top = new Map<string, number>();
    mon.on('monitor', (_t: string, args: string[], source: string, db: string) => {
      void db;
      if (source === 'lua') return;
      if (args[0].toLowerCase() === 'info' || args[0].toLowerCase() === 'monitor') return;
      let name = args[0].toLowerCase();
      if (name === 'evalsha') name = `evalsha ${names.get(args[1]) ?? args[1].slice(0, 8)}`;
      top.set(name, (top.get(name) ?? 0) + 1);
    });
    const withMonitor = !process.argv.includes('--no-monitor');
    if (!withMonitor) mon.disconnect();
    const slow = process.argv.includes('--slowlog');
    if (slow) {
      await admin.config('SET', 'slowlog-log-slower-than', '0');
      await admin.config('SET', 'slowlog-max-len', '1000000');
      await admin.slowlog('RESET');
    }
    await admin.config('RESETSTAT');
    const cpu0 = process.cpuUsage();
    const vcpu = async (): Promise<number> => {
      const i = parseInfo((await admin.info('cpu')) as string);
      return (Number(i.get('used_cpu_user')) + Number(i.get('used_cpu_sys'))) * 1e6;
    };
    const v0 = await vcpu();
    const ms = await run(n, 0);
    const v1 = await vcpu();
    const cpu = process.cpuUsage(cpu0);
    console.log(`client CPU ${((cpu.user + cpu.system) / n).toFixed(0)} µs/flow (${((cpu.user + cpu.system) / 1000 / ms).toFixed(2)} cores), Valkey CPU ${((v1 - v0) / n).toFixed(0)} µs/flow (${((v1 - v0) / 1000 / ms).toFixed(2)} cores)`);
    const inner = await stats(admin);
    if (slow) {
      const log = (await admin.slowlog('GET', -1)) as [number, number, number, string[]][];
      await admin.config('SET', 'slowlog-log-slower-than', '10000');
      const by = new Map<string, [number, number]>();
      for (const [, , us, args] of log) {
        let name = String(args[0]).toLowerCase();
        if (name === 'evalsha') name = `evalsha ${names.get(String(args[1])) ?? String(args[1]).slice(0, 8)}`;
        const e = by.get(name) ?? [0, 0];
        by.set(name, [e[0] + 1, e[1] + us]);
      }
      console.log('Valkey µs per flow by top-level command (slowlog at 0 µs): calls/flow, µs/flow, µs/call');
      for (const [k, [c, us]] of [...by].sort((a, b) => b[1][1] - a[1][1])) console.log(`  ${k.padEnd(28)} ${(c / n).toFixed(3)} ${(us / n).toFixed(1)} ${(us / c).toFixed(1)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
    mon.disconnect();
    monConn.disconnect();
    const lat = start.map((s, i) => s - last[i]).sort((a, b) => a - b);
    console.log(`${n} flows in ${ms.toFixed(0)} ms (${Math.round((n / ms) * 1000)} flows/s${withMonitor ? ', with MONITOR on' : ''}); fan-in p50 ${lat[Math.floor(n / 2)].toFixed(2)} p99 ${lat[Math.floor(n * 0.99)].toFixed(2)} ms`);
    console.log('top-level per flow (round trips):');
    let sum = 0;
    for (const [k, v] of [...top].sort((a, b) => b[1] - a[1])) {
      sum += v;
      console.log(`  ${k.padEnd(28)} ${(v / n).toFixed(3)}`);
    }
    console.log(`  total ${(sum / n).toFixed(2)}`);
    console.log('every command per flow (commandstats):');
    let all = 0;
    for (const [k, v] of [...inner].sort((a, b) => b[1] - a[1])) {
      if (k === 'info' || k === 'config|resetstat' || k === 'monitor') continue;
      all += v;
      console.log(`  ${k.padEnd(28)} ${(v / n).toFixed(3)}`);
    }
    console.log(`  total ${(all / n).toFixed(2)}`);
    for (const c of consumers) await c.stop(2000);
    await svc.flows.close();
    await conn.close();
    admin.disconnect();
  } finally {
    await valkey.stop();
  }
}

if (process.argv[1]?.endsWith('flows-probe.js')) await main();
