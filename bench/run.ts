/**
 * `npm run bench [-- --quick]`: starts one fresh Valkey, measures EchoMQ and BullMQ on it phase
 * by phase (each phase on a fresh queue, FLUSHALL in between), plus the EchoMQ-only rows (the Bus,
 * and the queue with its lifecycle log), then the Cache against bentocache on the same Valkey,
 * prints the tables, and writes `docs/benchmarks.md` and
 * `bench/results.json`. Stops Valkey at the end.
 */
import { startEmbeddedValkey } from '../src/testing/index.js';
import { SYSTEMS, sizes, type BenchSizes, type SystemName } from './common.js';
import { makeDriver } from './drivers.js';
import { busGroup, busLatency, busPublishBatch, busPublishSingle, processEventsLog } from './bus-phases.js';
import { enqueueBatch, enqueueSingle, latency, memory, processChildren, processLocal, type PhaseContext, type PhaseResult } from './phases.js';
import { Probe } from './probe.js';
import { GROUPS_METRIC } from './bus.js';
import { summarize, type PhaseRecord } from './format.js';
import { environment, printCache, printEchoOnly, printTable, writeReport } from './report.js';
import { runCacheSuite } from './cache-phases.js';
import { flowsTable, runFlowsSuite } from './flows.js';

/** One phase of the run: a label, and how to run it for one system. */
interface Phase {
  readonly label: string;
  /** Run in the first repetition only (the measurement is deterministic). */
  readonly once?: boolean;
  /** The systems it runs for (default both); the Bus and lifecycle-log phases are EchoMQ only. */
  readonly systems?: readonly SystemName[];
  run(ctx: PhaseContext): Promise<PhaseResult>;
}

const ECHO_ONLY: readonly SystemName[] = ['echomq'];

function phases(s: BenchSizes): Phase[] {
  const p = s.process;
  const b = s.bus;
  return [
    { label: 'enqueue single', run: (c) => enqueueSingle(c, s.enqueueSingle) },
    { label: 'enqueue batch', run: (c) => enqueueBatch(c, s.enqueueBatch) },
    { label: 'process c1', run: (c) => processLocal(c, 'process_c1_per_s', 1, p.c1) },
    { label: 'process c10', run: (c) => processLocal(c, 'process_c10_per_s', 10, p.c10) },
    { label: 'process c50', run: (c) => processLocal(c, 'process_c50_per_s', 50, p.c50) },
    { label: 'process c50 priorities', run: (c) => processLocal(c, 'process_c50_prio_per_s', 50, p.c50, { priorities: 10 }) },
    // BullMQ OSS has no groups (BullMQ Pro does): EchoMQ only.
    { label: 'process c50 100 groups', systems: ECHO_ONLY, run: (c) => processLocal(c, GROUPS_METRIC, 50, p.c50, { groups: 100 }) },
    { label: 'process c50 events log', systems: ECHO_ONLY, run: (c) => processEventsLog(c, p.c50) },
    { label: 'process 2x50', run: (c) => processChildren(c, 'process_2x50_per_s', 2, 50, p['2x50']) },
    { label: 'latency', run: (c) => latency(c, s.latencyRate, s.latencySeconds, s.latencyConcurrency) },
    { label: 'bus publish single', systems: ECHO_ONLY, run: (c) => busPublishSingle(c, b.publishSingle) },
    { label: 'bus publish batch', systems: ECHO_ONLY, run: (c) => busPublishBatch(c, b.publishBatch) },
    { label: 'bus group c1', systems: ECHO_ONLY, run: (c) => busGroup(c, 'bus_group_c1_per_s', 1, b.group.c1) },
    { label: 'bus group c50', systems: ECHO_ONLY, run: (c) => busGroup(c, 'bus_group_c50_per_s', 50, b.group.c50) },
    { label: 'bus latency', systems: ECHO_ONLY, run: (c) => busLatency(c, b.latencyRate, b.latencySeconds, b.latencyConcurrency) },
    { label: 'memory', once: true, run: (c) => memory(c, s.memoryJobs) },
  ];
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const s = sizes(quick);
  const started = Date.now();
  const valkey = await startEmbeddedValkey();
  const probe = new Probe(valkey.url);
  const records: PhaseRecord[] = [];
  try {
    const env = await environment(probe, quick);
    console.log(`EchoMQ vs BullMQ on Valkey ${env.valkey} at ${valkey.url}${quick ? ' (quick run)' : `, ${s.reps} repetitions`}`);
    if (env.loadAvg > 0.5) console.warn(`note: load average is ${env.loadAvg.toFixed(2)}; other work on this machine will skew the numbers`);
    // Untimed warm-up of both consumers (JIT, script cache), so the first timed phase is fair.
    for (const system of SYSTEMS) {
      const driver = makeDriver(system, valkey.url);
      await processLocal({ driver, probe, url: valkey.url }, 'warmup', 10, 2000);
      await driver.close();
    }
    // And of the Bus group consumer (EchoMQ only).
    const busDriver = makeDriver('echomq', valkey.url);
    await busGroup({ driver: busDriver, probe, url: valkey.url }, 'warmup', 10, 2000);
    await busDriver.close();
    const list = phases(s);
    // The whole suite repeats, so the repetitions of one phase are spread over the run.
    for (let rep = 0; rep < s.reps; rep++) {
      for (const [i, phase] of list.entries()) {
        if (phase.once && rep > 0) continue;
        // Alternate which system goes first, so neither always runs on a warmer server.
        const systems = phase.systems ?? SYSTEMS;
        const order: readonly SystemName[] = (i + rep) % 2 === 0 ? systems : [...systems].reverse();
        for (const system of order) records.push(await runOne(phase, system, rep, valkey.url, probe));
      }
    }
    // The cache: EchoMQ vs bentocache, same Valkey, same repetitions.
    console.log('Cache: EchoMQ vs bentocache');
    const cache = await runCacheSuite(valkey.url, probe, quick, s.reps, env.versions.bentocache);
    console.log('Flows: EchoMQ vs BullMQ FlowProducer');
    const flows = await runFlowsSuite(valkey.url, quick);
    const { results, echoOnly, medianRecords } = summarize(records);
    printTable(results);
    printEchoOnly(echoOnly);
    printCache(cache);
    console.log(`Flows:\n${flowsTable(flows)}\n`);
    const files = writeReport({ results, echoOnly, records, medianRecords, env, sizes: s, cache, flows, seconds: (Date.now() - started) / 1000 });
    console.log(`wrote ${files.join(' and ')}`);
  } finally {
    await probe.close();
    await valkey.stop();
  }
}

async function runOne(phase: Phase, system: SystemName, rep: number, url: string, probe: Probe): Promise<PhaseRecord> {
  const driver = makeDriver(system, url);
  try {
    const r = await phase.run({ driver, probe, url });
    const shown = Object.entries(r.values).map(([k, v]) => `${k}=${v.toFixed(v < 100 ? 3 : 0)}`);
    console.log(`  #${rep + 1} ${phase.label.padEnd(22)} ${system.padEnd(7)} ${shown.join(' ')}${r.note ? `  (${r.note})` : ''}`);
    return { phase: phase.label, system, rep, ...r };
  } finally {
    await driver.close();
  }
}

// A peer's client that was closed with a command still queued (ioredis rejects it with "Connection
// is closed." and nobody awaits it) is not a measurement: it is reported and the run goes on.
process.on('unhandledRejection', (err: unknown) => {
  if (err instanceof Error && err.message === 'Connection is closed.') console.warn(`bench: a closed client dropped a queued command (${err.message})`);
  else {
    console.error('bench failed:', err);
    process.exit(1);
  }
});

main().then(
  () => {
    // Everything is closed, so the process exits by itself; if a handle lingers, say so and exit.
    setTimeout(() => {
      console.warn('bench: handles still open 2 s after the run; exiting');
      process.exit(0);
    }, 2000).unref();
  },
  (err: unknown) => {
    console.error('bench failed:', err);
    process.exit(1);
  },
);
