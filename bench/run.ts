/**
 * `npm run bench [-- --quick | --steady] [--backlog-1m] [--rows c50,c200,…] [--reps N] [--write]`: starts
 * one fresh Valkey and measures EchoMQ against BullMQ and bee-queue on it phase by phase (each
 * phase on a fresh queue, FLUSHALL in between; a warm-up of 1.5× the timed jobs on the same
 * running consumer before the clock starts; the order of the systems alternating per phase and
 * repetition), plus the EchoMQ-only rows (the Bus, groups, the lifecycle log), the Valkey ceiling
 * (valkey-benchmark on the claim + complete scripts), then the Cache against bentocache and the
 * flows against BullMQ's FlowProducer on the same Valkey; prints the tables and writes the report
 * (`benchmarks.md` and `results.json`) to `bench/out/`, or with `--write` over the committed
 * `docs/benchmarks.md` and `bench/results.json`. `--rows` runs only the named rows and writes
 * nothing (a smoke test). Stops Valkey at the end.
 */
import { loadavg } from 'node:os';
import { startEmbeddedValkey } from '@echomq/nestjs/testing';
import { SYSTEMS, type Metric, type SystemName } from './common.js';
import { sizes, type BenchSizes } from './sizes.js';
import { makeDriver } from './drivers.js';
import { busGroup, busGroupReadAhead, busLatency, busPublishBatch, busPublishSingle, processEventsLog, rawGroupC1, rawGroupC1ReadAhead, rawPublishBatch, rawPublishSingle, withAnchor } from './bus-phases.js';
import { processRateLimited } from './rate-phases.js';
import { fanoutCompleted } from './fanout.js';
import { enqueueBatch, enqueueSingle, latency, memory, processChildren, processLocal, type PhaseContext, type PhaseResult } from './phases.js';
import { Probe } from './probe.js';
import { GROUPS_METRIC } from './bus.js';
import type { PhaseRecord, Report } from './format.js';
import { targets41Console } from './targets41.js';
import { summarize } from './pairs.js';
import { echoOnlySummary, environment, printCache, printEchoOnly, printTable, writeReport } from './report.js';
import { runCacheSuite, type CacheReport } from './cache-phases.js';
import { flowsTable, runFlowsSuite, type FlowsReport } from './flows.js';
import { measureCeiling, nearestBatch, pairedCeiling, type CeilingReport } from './ceiling.js';
import { CEILING_ROWS } from './queue-doc.js';
import { wroteLine, writesCommitted } from './output.js';
import { clusterTable, runClusterSuite, type ClusterReport } from './cluster.js';

/** One phase of the run: a key for `--rows`, a label, and how to run it for one system. */
interface Phase {
  readonly key: string;
  readonly label: string;
  /** Run in the first repetition only (the measurement is deterministic). */
  readonly once?: boolean;
  /** The systems it runs for (default all three); where an anchor lacks the feature it is left out. */
  readonly systems?: readonly SystemName[];
  /** Run only when `--rows` names its key (not part of the report's run). */
  readonly optIn?: boolean;
  run(ctx: PhaseContext): Promise<PhaseResult>;
}

const ECHO_ONLY: readonly SystemName[] = ['echomq'];
/** How many times a pair with a noisy run is measured again (so at most 1 + this attempts). */
const NOISY_RETRIES = 2;
/** bee-queue has no priorities, and no prefetch (its c1 row is the comparison). */
const NO_BEE: readonly SystemName[] = ['echomq', 'bullmq'];

const backlogLabel = (n: number): string => (n >= 1e6 ? `${n / 1e6}m` : `${n / 1e3}k`);

function phases(s: BenchSizes): Phase[] {
  const n = s.process;
  const b = s.bus;
  return [
    { key: 'single', label: 'enqueue single', run: (c) => enqueueSingle(c, s.enqueueSingle) },
    { key: 'batch', label: 'enqueue batch', run: (c) => enqueueBatch(c, s.enqueueBatch) },
    { key: 'c1', label: 'process c1', run: (c) => processLocal(c, 'process_c1_per_s', 1, n) },
    { key: 'c1p0', label: 'process c1 prefetch 0', systems: NO_BEE, run: (c) => processLocal(c, 'process_c1_prefetch0_per_s', 1, n, undefined, { prefetch: 0 }) },
    { key: 'c10', label: 'process c10', run: (c) => processLocal(c, 'process_c10_per_s', 10, n) },
    { key: 'c50', label: 'process c50', run: (c) => processLocal(c, 'process_c50_per_s', 50, n) },
    { key: 'c200', label: 'process c200', run: (c) => processLocal(c, 'process_c200_per_s', 200, n) },
    { key: 'prio', label: 'process c50 priorities', systems: NO_BEE, run: (c) => processLocal(c, 'process_c50_prio_per_s', 50, n, { priorities: 10 }) },
    // BullMQ OSS has no groups (BullMQ Pro does): EchoMQ only.
    { key: 'groups', label: 'process c50 100 groups', systems: ECHO_ONLY, run: (c) => processLocal(c, GROUPS_METRIC, 50, n, { groups: 100 }) },
    { key: 'elog', label: 'process c50 events log', systems: ECHO_ONLY, run: (c) => processEventsLog(c, n) },
    { key: 'x2', label: 'process 2x50', run: (c) => processChildren(c, 'process_2x50_per_s', 2, 50, n) },
    ...s.backlogs.map(
      (k): Phase => ({
        key: 'backlog',
        label: `process c50 backlog ${backlogLabel(k)}`,
        run: (c) => processLocal(c, `process_c50_backlog_${backlogLabel(k)}_per_s`, 50, n, undefined, { backlog: k }),
      }),
    ),
    { key: 'lat', label: 'latency', run: (c) => latency(c, s.latencyRate, s.latencySeconds, s.latencyConcurrency) },
    { key: 'lat5k', label: 'latency 5k', run: (c) => latency(c, s.latency5kRate, s.latency5kSeconds, s.latencyConcurrency, 'latency_5k') },
    // Lifecycle fan-out: the completed event to 4 listeners (EchoMQ's lifecycle log vs BullMQ's QueueEvents).
    { key: 'fanout', label: 'fanout completed x4', systems: NO_BEE, run: (c) => fanoutCompleted(c, s.fanout) },
    // Each Bus throughput row beside its raw anchor (bus-raw.ts), in the same phase, order alternated per repetition.
    { key: 'bus', label: 'bus publish single', systems: ECHO_ONLY, run: (c) => withAnchor(c, (x) => busPublishSingle(x, b.publishSingle), (x) => rawPublishSingle(x, b.publishSingle)) },
    { key: 'bus', label: 'bus publish batch', systems: ECHO_ONLY, run: (c) => withAnchor(c, (x) => busPublishBatch(x, b.publishBatch), (x) => rawPublishBatch(x, b.publishBatch)) },
    { key: 'bus', label: 'bus group c1', systems: ECHO_ONLY, run: (c) => withAnchor(c, (x) => busGroup(x, 'bus_group_c1_per_s', 1, b.group.c1), (x) => rawGroupC1(x, b.group.c1)) },
    { key: 'bus', label: 'bus group c1 read-ahead', systems: ECHO_ONLY, run: (c) => withAnchor(c, (x) => busGroupReadAhead(x, b.group.c1ra), (x) => rawGroupC1ReadAhead(x, b.group.c1ra)) },
    { key: 'bus', label: 'bus group c50', systems: ECHO_ONLY, run: (c) => withAnchor(c, (x) => busGroup(x, 'bus_group_c50_per_s', 50, b.group.c50), (x) => busGroup(x, 'raw_group_c50_per_s', 50, b.group.c50, { raw: true })) },
    { key: 'bus', label: 'bus latency', systems: ECHO_ONLY, run: (c) => busLatency(c, b.latencyRate, b.latencySeconds, b.latencyConcurrency) },
    { key: 'memory', label: 'memory', once: true, run: (c) => memory(c, s.memoryJobs) },
    // Rate limiters at a limit that never binds (EchoMQ only, named rows only): what a window costs.
    ...(['none', 'fixed', 'sliding'] as const).map(
      (w): Phase => ({ key: 'rate', label: `process c50 rate ${w}`, systems: ECHO_ONLY, optIn: true, run: (c) => processRateLimited(c, w, n) }),
    ),
  ];
}

/** The value of `--name v` in argv, or undefined. */
function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** Every key `--rows` accepts: the phases', and the suites'. */
const SUITE_KEYS = ['ceiling', 'cache', 'flows', 'cluster'];

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const base = sizes(quick ? 'quick' : 'steady', process.argv.includes('--backlog-1m'));
  const reps = Number(arg('reps') ?? base.reps);
  if (!(Number.isInteger(reps) && reps >= 1)) throw new Error('--reps must be a whole number >= 1');
  const s: BenchSizes = { ...base, reps };
  const list = phases(s);
  const rows = arg('rows')?.split(',');
  const known = new Set([...list.map((p) => p.key), ...SUITE_KEYS]);
  for (const r of rows ?? []) if (!known.has(r)) throw new Error(`unknown row ${r}; rows: ${[...known].join(', ')}`);
  const wanted = (key: string): boolean => !rows || rows.includes(key);
  const write = writesCommitted();
  if (write && rows) throw new Error('--write refreshes the committed report from a whole run: leave out --rows');
  if (write && quick) console.warn('note: --write with --quick replaces the committed report with a smoke run');
  const started = Date.now();
  const valkey = await startEmbeddedValkey();
  const probe = new Probe(valkey.url);
  const records: PhaseRecord[] = [];
  const superseded: PhaseRecord[] = [];
  try {
    const env = await environment(probe, quick);
    console.log(`EchoMQ vs BullMQ and bee-queue on Valkey ${env.valkey} at ${valkey.url}: ${s.mode} run, ${s.reps} repetition(s)${rows ? `, rows ${rows.join(',')} (nothing written)` : ''}`);
    if (env.loadAvg > 0.5) console.warn(`note: load average is ${env.loadAvg.toFixed(2)}; other work on this machine will skew the numbers`);
    // Untimed warm-up of every consumer (JIT, script cache), so the first timed phase is fair.
    for (const system of SYSTEMS) {
      const driver = makeDriver(system, valkey.url);
      await processLocal({ driver, probe, url: valkey.url }, 'warmup', 10, s.startWarmup);
      await driver.close();
    }
    // And of the Bus group consumer (EchoMQ only).
    const busDriver = makeDriver('echomq', valkey.url);
    await busGroup({ driver: busDriver, probe, url: valkey.url }, 'warmup', 10, s.startWarmup);
    await busDriver.close();
    console.log(`Valkey ceiling: claim.lua + complete.lua in one call, from valkey-benchmark (${Math.round((Date.now() - started) / 1000)} s into the run)`);
    const ceiling: CeilingReport = wanted('ceiling') ? await measureCeiling(valkey.url, probe, s.ceilingJobs) : { rows: [], clients: 0, jobs: 0, error: 'not run' };
    // The whole suite repeats, so the repetitions of one phase are spread over the run.
    for (let rep = 0; rep < s.reps; rep++) {
      for (const [i, phase] of list.entries()) {
        if ((phase.once && rep > 0) || !wanted(phase.key) || (phase.optIn && !rows)) continue;
        // Alternate which system goes first, so neither always runs on a warmer server.
        const systems = phase.systems ?? SYSTEMS;
        const order: readonly SystemName[] = (i + rep) % 2 === 0 ? systems : [...systems].reverse();
        // A pair with a noisy run (other processes on the CPU) is measured again, all of its
        // systems in the same order: the last attempt counts, noisy or not; the ones it replaces
        // are kept as `superseded` (results.json, and counted in the doc).
        for (let attempt = 0; ; attempt++) {
          const pair: PhaseRecord[] = [];
          for (const system of order) {
            const r = await runOne(phase, system, rep, valkey.url, probe, s.warmup);
            pair.push(system === 'echomq' && wanted('ceiling') ? await withCeiling(r, valkey.url, probe, s.ceilingJobs) : r);
          }
          const noisy = pair.some((r) => r.cost?.load?.noisy || r.anchorCost?.load?.noisy);
          if (!noisy || attempt >= NOISY_RETRIES || phase.once) {
            records.push(...pair);
            break;
          }
          console.log(`     noisy: measuring the pair again (attempt ${attempt + 2} of ${NOISY_RETRIES + 1})`);
          superseded.push(...pair);
        }
      }
    }
    const loadAvgEnd = loadavg()[0];
    const summary = summarize(records);
    const echoOnly = echoOnlySummary(records);
    printTable(summary);
    printEchoOnly(echoOnly);
    let cache: CacheReport | undefined;
    let flows: FlowsReport | undefined;
    const mark = (what: string): void => console.log(`${what} (${Math.round((Date.now() - started) / 1000)} s into the run)`);
    mark('queue phases done');
    if (wanted('cache')) {
      console.log('Cache: EchoMQ vs bentocache');
      cache = await runCacheSuite(valkey.url, probe, quick, s.reps, env.versions.bentocache);
      printCache(cache);
      mark('cache done');
    }
    if (wanted('flows')) {
      console.log('Flows: EchoMQ vs BullMQ FlowProducer');
      flows = await runFlowsSuite(valkey.url, quick, undefined, valkey.pid);
      console.log(`Flows:\n${flowsTable(flows)}\n`);
      mark('flows done');
    }
    let cluster: ClusterReport | undefined;
    if (wanted('cluster')) {
      console.log(`Cluster: EchoMQ on standalone, a 1-primary and a 3-primary Valkey Cluster (load average ${loadavg()[0].toFixed(2)})`);
      // At least 5,000 timed jobs: with the quick run's 1,000 (333 per queue in the 3-queue shape) the idle polls weigh on the cost per job.
      cluster = await runClusterSuite(valkey.url, Math.max(s.process, 5000), s.warmup, s.reps);
      console.log(`Cluster:\n${clusterTable(cluster)}\n`);
      mark('cluster done');
    }
    if (rows || !cache || !flows) return;
    const report: Report = { ...summary, echoOnly, records, superseded, env: { ...env, loadAvgEnd }, sizes: s, ceiling, cache, flows, cluster, seconds: (Date.now() - started) / 1000 };
    const files = writeReport(report, write);
    console.log(`\n${targets41Console(report)}\n`);
    console.log(`${wroteLine(files, write)} (${Math.round((Date.now() - started) / 1000)} s)`);
  } finally {
    await probe.close();
    await valkey.stop();
  }
}

/**
 * An EchoMQ run of a ceiling row, with the ceiling measured right after it at its own claim size
 * (1 / script calls per job: the consumer claims and completes in one round call): the faster of
 * two runs, each on a quarter of the start-of-run ceiling's jobs (an upper bound, as there: a
 * shared machine only ever slows a run). Other records pass unchanged.
 */
async function withCeiling(r: PhaseRecord, url: string, probe: Probe, jobs: number): Promise<PhaseRecord> {
  const metric = Object.keys(r.values).find((m) => CEILING_ROWS.has(m as Metric));
  const spj = r.cost?.scriptsPerJob;
  if (!metric || !spj || !(spj > 0)) return r;
  const ceiling = await pairedCeiling(url, probe, nearestBatch(1 / spj), Math.round(jobs / 4));
  if (!ceiling) return r;
  console.log(`     ceiling beside it ×${ceiling.batch}: ${Math.round(ceiling.jobsPerS).toLocaleString('en-US')} jobs/s, EchoMQ at ${Math.round((100 * r.values[metric]) / ceiling.jobsPerS)}%`);
  return { ...r, ceiling };
}

async function runOne(phase: Phase, system: SystemName, rep: number, url: string, probe: Probe, warmup: number): Promise<PhaseRecord> {
  const driver = makeDriver(system, url);
  const t0 = Date.now();
  try {
    const r = await phase.run({ driver, probe, url, warmup, rep });
    const shown = Object.entries(r.values).map(([k, v]) => `${k}=${v.toFixed(v < 100 ? 3 : 0)}`);
    const load = r.cost?.load;
    const other = load?.otherCores === undefined ? '' : ` other=${load.otherCores.toFixed(2)}${load.noisy ? ' ⚠ noisy' : ''}`;
    const took = `${((Date.now() - t0) / 1000).toFixed(1)} s`;
    console.log(`  #${rep + 1} ${phase.label.padEnd(26)} ${system.padEnd(8)} ${shown.join(' ')}${other}${r.note ? `  (${r.note})` : ''} [${took}]`);
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
