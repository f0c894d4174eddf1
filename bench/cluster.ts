/**
 * The cluster rows (`--rows cluster`): EchoMQ's c50 processing row on a standalone Valkey, on a
 * 1-primary Valkey Cluster and on a local 3-primary one, in the same run, the order of the three
 * rotating per repetition. Two shapes: one queue under one consumer of concurrency 50, and three
 * queues each under its own consumer of concurrency 50 in the same process (on the 3-primary
 * cluster, one queue per primary: a queue is one slot, `{name}`). Per run: jobs/s, Valkey commands
 * and CPU µs per job summed over the nodes (`INFO commandstats` / `INFO cpu`), the bench's own CPU
 * per job, the redirections the nodes answered (`INFO errorstats`: MOVED, ASK), and the client
 * connections on each node (`CLIENT LIST`) before the consumers, while they run, and after.
 * The clusters are throwaway local ones (`@echomq/nestjs/testing`: loopback, free ports, temp
 * folders, stopped by pid).
 */
import { Redis } from 'iovalkey';
import { namesOnDistinctOwners, startEmbeddedValkey, startValkeyCluster, type EmbeddedValkey, type ValkeyCluster } from '@echomq/nestjs/testing';
import { inBatches, payload100, randomQueue, sleep, type ConsumerHandle } from './common.js';
import { EchoMqDriver, type EchoTarget } from './echomq.js';
import { clientCount, clientNames, commandCalls, cpuUs, perRepRatios, redirections, scriptCalls } from './cluster-stats.js';
import { phaseLoad, snapshot, type PhaseLoad } from './load.js';
import { median, pairStat, pairText, type PairStat } from './pairs.js';
import { Counter, drained } from './phases.js';

/** Where a cluster row runs. */
export const TOPOLOGIES = ['standalone', 'cluster-1', 'cluster-3'] as const;
export type Topology = (typeof TOPOLOGIES)[number];

/** The shapes of the row: queues, each under its own consumer of this concurrency. */
export const CLUSTER_SHAPES = [
  { queues: 1, concurrency: 50 },
  { queues: 3, concurrency: 50 },
] as const;

/** The name the bench's admin connections carry (left out of the connection counts). */
const PROBE_NAME = 'bench-probe';

/** One node the suite reads. */
interface Node {
  readonly host: string;
  readonly port: number;
}

/** A running deployment: its nodes, how EchoMQ connects to it, and how queue names are placed. */
interface Deployment {
  readonly topology: Topology;
  readonly nodes: readonly Node[];
  readonly target: EchoTarget;
  /** `k` fresh queue names (on a multi-primary cluster: on distinct primaries). */
  names(prefix: string, k: number): Promise<string[]>;
  stop(): Promise<void>;
}

async function deploy(topology: Topology, standaloneUrl: string): Promise<Deployment> {
  const random = async (prefix: string, k: number): Promise<string[]> => Array.from({ length: k }, () => randomQueue(prefix));
  if (topology === 'standalone') {
    const u = new URL(standaloneUrl);
    return { topology, nodes: [{ host: u.hostname, port: Number(u.port) }], target: standaloneUrl, names: random, stop: async () => undefined };
  }
  if (topology === 'cluster-1') {
    const v: EmbeddedValkey = await startEmbeddedValkey({ cluster: true });
    const seeds = [{ host: v.host, port: v.port }];
    return { topology, nodes: seeds, target: { cluster: seeds }, names: random, stop: () => v.stop() };
  }
  const c: ValkeyCluster = await startValkeyCluster({ primaries: 3 });
  return {
    topology,
    nodes: c.seeds,
    target: { cluster: c.seeds },
    names: async (prefix, k) => {
      const primaries = await c.primaries();
      const owner = (slot: number): string | undefined => primaries.find((p) => p.slots.some(([lo, hi]) => slot >= lo && slot <= hi))?.id;
      return namesOnDistinctOwners(randomQueue(prefix), k, owner);
    },
    stop: () => c.stop(),
  };
}

/** What one run of a cluster row measured. */
export interface ClusterRun {
  readonly topology: Topology;
  readonly queues: number;
  readonly concurrency: number;
  readonly rep: number;
  readonly jobsPerS: number;
  readonly jobs: number;
  readonly seconds: number;
  /** Every command the nodes ran (inside scripts too), summed over the nodes, per job. */
  readonly commandsPerJob: number;
  /** Script calls (`EVALSHA`, `EVAL`) the nodes ran, summed, per job: fewer jobs per call means more per-call cost. */
  readonly scriptsPerJob: number;
  /** The nodes' CPU summed while idle before the run (cron, cluster bus), µs per second. */
  readonly idleUsPerS: number;
  /** The nodes' CPU (user + sys) summed, µs per job. */
  readonly valkeyUsPerJob: number;
  /** This process's CPU, µs per job. */
  readonly clientUsPerJob: number;
  /** MOVED and ASK replies the nodes sent during the timed part. */
  readonly moved: number;
  readonly ask: number;
  /** Client connections per node (the bench's admin ones left out): before the consumers, while they ran, after they closed. */
  readonly connsBefore: readonly number[];
  readonly connsDuring: readonly number[];
  readonly connsAfter: readonly number[];
  /** The connections while the consumers ran, by name (digits folded), summed over the nodes. */
  readonly namesDuring: Readonly<Record<string, number>>;
  readonly load: PhaseLoad;
}

/** The admin side: one named connection per node. */
class NodesProbe {
  private readonly admins: Redis[];

  constructor(nodes: readonly Node[]) {
    this.admins = nodes.map((n) => new Redis({ host: n.host, port: n.port, maxRetriesPerRequest: 1, connectionName: PROBE_NAME }));
  }

  private each(...args: (string | number)[]): Promise<string[]> {
    return Promise.all(this.admins.map((a) => a.call(...(args as [string, ...(string | number)[]])).then(String)));
  }

  /** The connections on every node by name (see `clientNames`), summed over the nodes. */
  async names(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const l of await this.each('CLIENT', 'LIST')) for (const [k, v] of Object.entries(clientNames(l, [PROBE_NAME]))) out[k] = (out[k] ?? 0) + v;
    return out;
  }

  clients(): Promise<number[]> {
    return this.each('CLIENT', 'LIST').then((ls) => ls.map((l) => clientCount(l, [PROBE_NAME])));
  }

  async cpu(): Promise<number> {
    return (await this.each('INFO', 'cpu')).reduce((s, t) => s + cpuUs(t), 0);
  }

  async reset(): Promise<void> {
    await this.each('CONFIG', 'RESETSTAT');
  }

  async counts(): Promise<{ commands: number; scripts: number; moved: number; ask: number }> {
    const [stats, errors] = await Promise.all([this.each('INFO', 'commandstats'), this.each('INFO', 'errorstats')]);
    const r = errors.map(redirections);
    return { commands: stats.reduce((s, t) => s + commandCalls(t), 0), scripts: stats.reduce((s, t) => s + scriptCalls(t), 0), moved: r.reduce((s, x) => s + x.moved, 0), ask: r.reduce((s, x) => s + x.ask, 0) };
  }

  async flush(): Promise<void> {
    // Each primary drops its own keys (a cluster node refuses nothing here: FLUSHALL is node-local).
    await this.each('FLUSHALL');
  }

  async close(): Promise<void> {
    await Promise.all(this.admins.map((a) => a.quit()));
  }
}

/**
 * One run: `queues` queues of `(warm + n) / queues` jobs each (untimed enqueue), a consumer of
 * `concurrency` per queue in this process, the clock from the moment they together ran the warm-up
 * jobs until all ran and every queue drained.
 */
async function runRow(dep: Deployment, queues: number, concurrency: number, n: number, warmup: number, rep: number): Promise<ClusterRun> {
  const probe = new NodesProbe(dep.nodes);
  const driver = new EchoMqDriver(dep.target);
  const names = await dep.names(`cl${queues}`, queues);
  const perQueue = Math.ceil(n / queues);
  const warmPer = Math.ceil(warmup * perQueue);
  const consumers: ConsumerHandle[] = [];
  try {
    for (const q of names) {
      const p = await driver.producer(q);
      await inBatches(p, warmPer + perQueue, payload100);
      await p.close();
    }
    await Promise.all(names.map((q) => driver.unfinished(q))); // the inspection client is connected to every node now
    const connsBefore = await probe.clients();
    // What the nodes spend idle (cron, cluster bus), over half a second with nothing to do.
    const idle0 = await probe.cpu();
    const tIdle = performance.now();
    await sleep(500);
    const idleUsPerS = ((await probe.cpu()) - idle0) / ((performance.now() - tIdle) / 1000);
    const ran = new Counter();
    for (const q of names) consumers.push(await driver.consumer(q, concurrency, ran.tick));
    const warm = warmPer * queues;
    const total = warm + perQueue * queues;
    await Promise.all(consumers.map((c) => c.start()));
    await ran.reach(warm);
    await probe.reset();
    const cpu0 = await probe.cpu();
    const load0 = snapshot(undefined);
    const self0 = process.cpuUsage();
    const t0 = performance.now();
    const mark = ran.value;
    await ran.reach(total);
    for (const q of names) await drained(driver, q);
    const seconds = (performance.now() - t0) / 1000;
    const self = process.cpuUsage(self0);
    const valkeyUs = (await probe.cpu()) - cpu0;
    const load = phaseLoad(load0, snapshot(undefined), valkeyUs);
    const counts = await probe.counts();
    const connsDuring = await probe.clients();
    const namesDuring = await probe.names();
    await Promise.all(consumers.splice(0).map((c) => c.close()));
    const connsAfter = await probe.clients();
    const jobs = total - mark;
    return {
      topology: dep.topology,
      queues,
      concurrency,
      rep,
      jobsPerS: jobs / seconds,
      jobs,
      seconds,
      commandsPerJob: counts.commands / jobs,
      scriptsPerJob: counts.scripts / jobs,
      idleUsPerS,
      valkeyUsPerJob: valkeyUs / jobs,
      clientUsPerJob: (self.user + self.system) / jobs,
      moved: counts.moved,
      ask: counts.ask,
      connsBefore,
      connsDuring,
      connsAfter,
      namesDuring,
      load,
    };
  } finally {
    await Promise.all(consumers.map((c) => c.close()));
    await driver.close();
    await probe.flush();
    await probe.close();
  }
}

/** The cluster suite's outcome. */
export interface ClusterReport {
  readonly runs: readonly ClusterRun[];
  /** Timed jobs per run, and the warm-up multiple. */
  readonly jobs: number;
  readonly warmup: number;
  readonly reps: number;
}

/**
 * Runs every shape on every topology `reps` times, the order of the topologies rotating per
 * repetition; each cluster is started once and stopped at the end (by pid, folders removed).
 */
export async function runClusterSuite(standaloneUrl: string, n: number, warmup: number, reps: number, log: (line: string) => void = console.log): Promise<ClusterReport> {
  const deps: Deployment[] = [];
  try {
    for (const t of TOPOLOGIES) deps.push(await deploy(t, standaloneUrl));
    const runs: ClusterRun[] = [];
    for (let rep = 0; rep < reps; rep++) {
      for (const shape of CLUSTER_SHAPES) {
        const order = deps.map((_, i) => deps[(i + rep) % deps.length]);
        for (const dep of rep % 2 === 0 ? order : order.reverse()) {
          const r = await runRow(dep, shape.queues, shape.concurrency, n, warmup, rep);
          runs.push(r);
          log(`  #${rep + 1} ${`${shape.queues}q x c${shape.concurrency}`.padEnd(9)} ${dep.topology.padEnd(10)} ${Math.round(r.jobsPerS).toLocaleString('en-US').padStart(8)} jobs/s  ${r.commandsPerJob.toFixed(2)} cmd/job  ${r.scriptsPerJob.toFixed(3)} calls/job  ${r.valkeyUsPerJob.toFixed(1)} µs Valkey/job (idle ${Math.round(r.idleUsPerS)} µs/s)  ${r.clientUsPerJob.toFixed(1)} µs client/job  MOVED ${r.moved} ASK ${r.ask}  conns ${r.connsBefore.join('/')} → ${r.connsDuring.join('/')} → ${r.connsAfter.join('/')} (${Object.entries(r.namesDuring).map(([k, v]) => `${k}×${v}`).join(' ')})  load ${r.load.loadAvg1.toFixed(2)}${r.load.noisy ? ' ⚠ noisy' : ''}`);
        }
      }
    }
    return { runs, jobs: n, warmup, reps };
  } finally {
    for (const d of deps) await d.stop();
  }
}

/** One row of the summary: a shape on a topology. */
export interface ClusterSummaryRow {
  readonly shape: string;
  readonly topology: Topology;
  readonly jobsPerS: number;
  readonly commandsPerJob: number;
  readonly valkeyUsPerJob: number;
  readonly clientUsPerJob: number;
  readonly moved: number;
  readonly ask: number;
  /** Connections the consumers added per node while they ran (median over the repetitions). */
  readonly connsAdded: readonly number[];
  /** Connections left after they closed, beyond the count before (should be 0 everywhere). */
  readonly connsLeft: readonly number[];
  /** Per-repetition ratios to standalone (same shape, same repetition): throughput, commands, Valkey CPU per job. */
  readonly vsStandalone?: { readonly jobsPerS?: PairStat; readonly commands?: PairStat; readonly valkeyUs?: PairStat };
  readonly loads: readonly number[];
}

/** The medians per shape and topology, with the per-repetition ratios to standalone. */
export function summarizeCluster(report: ClusterReport): ClusterSummaryRow[] {
  const rows: ClusterSummaryRow[] = [];
  for (const shape of CLUSTER_SHAPES) {
    const label = `${shape.queues} queue${shape.queues > 1 ? 's' : ''} × c${shape.concurrency}`;
    const of = (t: Topology) => report.runs.filter((r) => r.topology === t && r.queues === shape.queues && r.concurrency === shape.concurrency);
    const byRep = (rs: readonly ClusterRun[], f: (r: ClusterRun) => number) => new Map(rs.map((r) => [r.rep, f(r)]));
    const base = of('standalone');
    for (const t of TOPOLOGIES) {
      const rs = of(t);
      if (rs.length === 0) continue;
      const nodes = rs[0].connsDuring.length;
      const perNode = (f: (r: ClusterRun, i: number) => number) => Array.from({ length: nodes }, (_, i) => median(rs.map((r) => f(r, i))));
      const ratio = (f: (r: ClusterRun) => number) => pairStat(perRepRatios(byRep(rs, f), byRep(base, f)));
      rows.push({
        shape: label,
        topology: t,
        jobsPerS: median(rs.map((r) => r.jobsPerS)),
        commandsPerJob: median(rs.map((r) => r.commandsPerJob)),
        valkeyUsPerJob: median(rs.map((r) => r.valkeyUsPerJob)),
        clientUsPerJob: median(rs.map((r) => r.clientUsPerJob)),
        moved: rs.reduce((s, r) => s + r.moved, 0),
        ask: rs.reduce((s, r) => s + r.ask, 0),
        connsAdded: perNode((r, i) => r.connsDuring[i] - r.connsBefore[i]),
        connsLeft: perNode((r, i) => r.connsAfter[i] - r.connsBefore[i]),
        vsStandalone: t === 'standalone' ? undefined : { jobsPerS: ratio((r) => r.jobsPerS), commands: ratio((r) => r.commandsPerJob), valkeyUs: ratio((r) => r.valkeyUsPerJob) },
        loads: rs.map((r) => r.load.loadAvg1),
      });
    }
  }
  return rows;
}

/** The summary as a Markdown table (also printed on the console). */
export function clusterTable(report: ClusterReport): string {
  const lines = [
    '| Shape | Deployment | jobs/s | × standalone | Valkey commands/job | × standalone | Valkey CPU µs/job | × standalone | Client CPU µs/job | MOVED / ASK | Connections added per node | left after | Load (1 min) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|',
  ];
  for (const r of summarizeCluster(report)) {
    const x = (p: PairStat | undefined) => (r.vsStandalone ? pairText(p) : '1');
    lines.push(
      `| ${r.shape} | ${r.topology} | ${Math.round(r.jobsPerS).toLocaleString('en-US')} | ${x(r.vsStandalone?.jobsPerS)} | ${r.commandsPerJob.toFixed(2)} | ${x(r.vsStandalone?.commands)} | ${r.valkeyUsPerJob.toFixed(1)} | ${x(r.vsStandalone?.valkeyUs)} | ${r.clientUsPerJob.toFixed(1)} | ${r.moved} / ${r.ask} | ${r.connsAdded.join(' / ')} | ${r.connsLeft.join(' / ')} | ${r.loads.map((l) => l.toFixed(1)).join(' · ')} |`,
    );
  }
  return lines.join('\n');
}
