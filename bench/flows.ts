/**
 * The flows rows of `npm run bench` (`runFlowsSuite`; also `node bench/dist/flows.js [--quick]`
 * alone): flows of 1 parent + 10 children, EchoMQ (`QueueService.flow`, children in another queue
 * than the parent, relayed through the outbox) against BullMQ's `FlowProducer` (its queues on one
 * node, as it requires), on the same Valkey, alternating which system goes first. Reports flows
 * completed per second (parents done) with `IN_FLIGHT` flows being created at once, and the fan-in
 * latency: the last child's handler returning → the parent's handler starting, p50 / p99; then the
 * same at a paced 100 flows/s (latency away from saturation), with the machine's own stalls
 * measured alongside (`stall-probe.ts`: the floor no code can go under). Each measured run
 * follows an untimed warm-up of the same size.
 */
import { FlowProducer, Worker } from 'bullmq';
import { EchoMqConnection } from '@echomq/nestjs/protocol';
import { Consumer, resolveConsumerOptions } from '@echomq/nestjs/unstable';
import { QueueService } from '@echomq/nestjs';
import { startEmbeddedValkey } from '@echomq/nestjs/testing';
import { nowMs, percentile, randomQueue } from './common.js';
import { median } from './format.js';
import { phaseLoad, snapshot } from './load.js';
import { startStallProbe } from './stall-probe.js';

const CHILDREN = 10;
const IN_FLIGHT = Number(process.env.FLOWS_IN_FLIGHT ?? 20);
const CHILD_CONCURRENCY = 50;
const PARENT_CONCURRENCY = 20;

interface FlowTimes {
  lastChildDone: number[];
  parentStart: number[];
  parentsDone: number;
}

/** One measured run. */
export interface Measured {
  readonly flowsPerSec: number;
  readonly fanInP50: number;
  readonly fanInP99: number;
  /** Paced runs: the idle probe's timer lateness p99 (ms) over the same time, the machine's floor. */
  readonly stallP99?: number;
  /** Paced runs: cores other processes used meanwhile (`load.ts`). */
  readonly otherCores?: number;
}

function track(n: number): FlowTimes {
  return { lastChildDone: new Array<number>(n).fill(0), parentStart: new Array<number>(n).fill(0), parentsDone: 0 };
}

function measure(t: FlowTimes, n: number, ms: number): Measured {
  const lat = t.parentStart.map((s, i) => s - t.lastChildDone[i]).sort((a, b) => a - b);
  return { flowsPerSec: Math.round((n / ms) * 1000), fanInP50: percentile(lat, 0.5), fanInP99: percentile(lat, 0.99) };
}

async function untilDone(t: FlowTimes, n: number): Promise<void> {
  while (t.parentsDone < n) await new Promise((r) => setTimeout(r, 2));
}

/** Flows per second of the paced run (fan-in latency away from saturation); 0 = as fast as possible. */
let pace = 0;
/** The Valkey server's pid (for `load.ts`), when known. */
let valkeyPid: number | undefined;

/** Runs a paced measurement with the stall probe and the load sampled around it; others as they are. */
async function observed(run: () => Promise<Measured>): Promise<Measured> {
  if (pace === 0) return run();
  const probe = startStallProbe();
  const before = snapshot(valkeyPid);
  const m = await run();
  const load = phaseLoad(before, snapshot(valkeyPid));
  const stalls = await probe.stop();
  return { ...m, stallP99: stalls?.p99, otherCores: load.otherCores };
}

/** Creates `n` flows, `IN_FLIGHT` at a time, or one every 1/pace s when paced. */
async function produce(n: number, create: (i: number) => Promise<unknown>): Promise<void> {
  if (pace > 0) {
    const started = nowMs();
    const all: Promise<unknown>[] = [];
    for (let i = 0; i < n; i++) {
      const due = started + (i * 1000) / pace;
      while (nowMs() < due) await new Promise((r) => setTimeout(r, Math.max(0, due - nowMs())));
      all.push(create(i));
    }
    await Promise.all(all);
    return;
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) await create(next++);
    }),
  );
}

async function echomq(url: string, n: number): Promise<Measured> {
  const conn = new EchoMqConnection({ url });
  await conn.open();
  const svc = new QueueService(conn);
  const [P, C] = [randomQueue('flowp'), randomQueue('flowc')];
  const t = track(n);
  const consumers = [
    new Consumer(conn, {
      queue: C,
      handler: (job) => {
        const f = (job.payload as { f: number }).f;
        t.lastChildDone[f] = Math.max(t.lastChildDone[f], nowMs());
      },
      ...resolveConsumerOptions(svc.settings(C), { concurrency: CHILD_CONCURRENCY }),
      // As ConsumerOrchestrator configures it: this process relays the children's hand-offs.
      handoff: { leaseMs: svc.flows.relay.leaseMs, relay: (entries) => svc.flows.relay.relayTaken(C, entries) },
    }),
    new Consumer(conn, {
      queue: P,
      handler: (job) => {
        t.parentStart[(job.payload as { f: number }).f] = nowMs();
        t.parentsDone++;
      },
      ...resolveConsumerOptions(svc.settings(P), { concurrency: PARENT_CONCURRENCY }),
    }),
  ];
  for (const c of consumers) await c.start();
  const started = nowMs();
  await produce(n, (f) => svc.flow({ queue: P, payload: { f }, children: Array.from({ length: CHILDREN }, (_, i) => ({ queue: C, payload: { f, i } })) }));
  await untilDone(t, n);
  const m = measure(t, n, nowMs() - started);
  for (const c of consumers) await c.stop(2000);
  await svc.flows.close();
  await conn.close();
  return m;
}

async function bullmq(url: string, n: number): Promise<Measured> {
  const u = new URL(url);
  const connection = { host: u.hostname, port: Number(u.port) };
  const [P, C] = [randomQueue('bflowp'), randomQueue('bflowc')];
  const t = track(n);
  const removeOnComplete = { count: 1000 };
  const workers = [
    new Worker(C, async (job) => {
      const f = (job.data as { f: number }).f;
      t.lastChildDone[f] = Math.max(t.lastChildDone[f], nowMs());
    }, { connection, concurrency: CHILD_CONCURRENCY, removeOnComplete }),
    new Worker(P, async (job) => {
      t.parentStart[(job.data as { f: number }).f] = nowMs();
      t.parentsDone++;
    }, { connection, concurrency: PARENT_CONCURRENCY, removeOnComplete }),
  ];
  for (const w of workers) await w.waitUntilReady();
  const producer = new FlowProducer({ connection });
  const started = nowMs();
  await produce(n, (f) =>
    producer.add({ name: 'p', queueName: P, data: { f }, children: Array.from({ length: CHILDREN }, (_, i) => ({ name: 'c', queueName: C, data: { f, i } })) }),
  );
  await untilDone(t, n);
  const m = measure(t, n, nowMs() - started);
  await Promise.all(workers.map((w) => w.close()));
  await producer.close();
  return m;
}

/** The flows rows: each system saturated and paced, the median of `reps` alternating runs. */
export interface FlowsReport {
  readonly flows: number;
  readonly paced: number;
  readonly pace: number;
  readonly children: number;
  readonly inFlight: number;
  readonly reps: number;
  readonly rows: readonly { readonly run: string; readonly system: 'echomq' | 'bullmq'; readonly m: Measured }[];
}

const medianOf = (ms: Measured[]): Measured => {
  const of = (f: (m: Measured) => number | undefined): number | undefined => {
    const xs = ms.map(f).filter((x): x is number => x !== undefined);
    return xs.length > 0 ? median(xs) : undefined;
  };
  return {
    flowsPerSec: median(ms.map((m) => m.flowsPerSec)),
    fanInP50: median(ms.map((m) => m.fanInP50)),
    fanInP99: median(ms.map((m) => m.fanInP99)),
    stallP99: of((m) => m.stallP99),
    otherCores: of((m) => m.otherCores),
  };
};

/**
 * Runs the flows rows on the Valkey at `url` (`pid`: its process, for the load figures). The
 * paced run's size is `FLOWS_PACED` (default 600, 6 s: its p99 is the 6th worst sample, where 300
 * made it the 3rd, which one scheduler stall decides).
 */
export async function runFlowsSuite(url: string, quick: boolean, reps = quick ? 1 : 3, pid?: number): Promise<FlowsReport> {
  const n = quick ? 300 : 1000;
  const paced = quick ? 100 : Number(process.env.FLOWS_PACED ?? 600);
  valkeyPid = pid;
  const systems = { echomq, bullmq } as const;
  const rows: { run: string; system: 'echomq' | 'bullmq'; m: Measured }[] = [];
  for (const [label, rate, count] of [['saturated', 0, n], [`paced ${100}/s`, 100, paced]] as const) {
    const got: Record<'echomq' | 'bullmq', Measured[]> = { echomq: [], bullmq: [] };
    for (let rep = 0; rep < reps; rep++) {
      const order = rep % 2 === 0 ? (['echomq', 'bullmq'] as const) : (['bullmq', 'echomq'] as const);
      for (const system of order) {
        pace = rate;
        await systems[system](url, count); // warm-up as long as the timed part
        got[system].push(await observed(() => systems[system](url, count)));
        console.log(`  flows ${label.padEnd(14)} ${system.padEnd(7)} ${JSON.stringify(got[system].at(-1))}`);
      }
    }
    for (const system of ['echomq', 'bullmq'] as const) rows.push({ run: label, system, m: medianOf(got[system]) });
  }
  pace = 0;
  return { flows: n, paced, pace: 100, children: CHILDREN, inFlight: IN_FLIGHT, reps, rows };
}

/** The flows table in Markdown. */
export function flowsTable(r: FlowsReport): string {
  const name = { echomq: 'EchoMQ', bullmq: 'BullMQ FlowProducer' } as const;
  const lines = [
    '| run | system | flows/s | fan-in p50 (ms) | fan-in p99 (ms) | machine stalls p99 (ms) | other cores |',
    '|---|---|---:|---:|---:|---:|---:|',
  ];
  const opt = (x: number | undefined): string => (x === undefined ? '—' : x.toFixed(2));
  for (const { run, system, m } of r.rows) {
    lines.push(`| ${run} | ${name[system]} | ${m.flowsPerSec} | ${m.fanInP50.toFixed(2)} | ${m.fanInP99.toFixed(2)} | ${opt(m.stallP99)} | ${opt(m.otherCores)} |`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const valkey = await startEmbeddedValkey();
  try {
    const quick = process.argv.includes('--quick');
    const reps = process.env.FLOWS_REPS ? Number(process.env.FLOWS_REPS) : undefined;
    const r = await runFlowsSuite(valkey.url, quick, reps, valkey.pid);
    console.log(`flows of 1 parent + ${CHILDREN} children: ${r.flows} flows saturated (${IN_FLIGHT} created at once), then ${r.paced} paced; children c${CHILD_CONCURRENCY}, parents c${PARENT_CONCURRENCY}`);
    console.log(flowsTable(r));
  } finally {
    await valkey.stop();
  }
}

if (process.argv[1]?.endsWith('flows.js')) await main();
