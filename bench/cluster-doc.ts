/**
 * The "Cluster" section of `docs/benchmarks.md`: EchoMQ's c50 row on standalone, a 1-primary and
 * a 3-primary local Valkey Cluster, in the same run (`cluster.ts`).
 */
import { clusterTable, type ClusterReport } from './cluster.js';

/** Renders the "Cluster" section, or a line saying it was not run. */
export function clusterSection(report: ClusterReport | undefined): string {
  if (!report) return '## Cluster (EchoMQ only)\n\nNot run in this run (`--rows cluster` runs it alone).\n';
  const n = (v: number): string => v.toLocaleString('en-US');
  return `## Cluster (EchoMQ only)

EchoMQ's c50 processing row on three deployments started by the same run on the same machine: the
run's standalone Valkey, a 1-primary Valkey Cluster (one node owning the 16,384 slots) and a local
3-primary one (loopback, no replicas), each with the same \`valkey-server\`. EchoMQ connects to the
clusters with \`connection: { cluster: seeds }\`. Two shapes: one queue under one consumer of
concurrency 50, and three queues each under its own consumer of concurrency 50 in the same process
(on the 3-primary cluster one queue per primary: a queue is one slot, its \`{name}\` hash tag). Per
run: ${n(report.jobs)} timed jobs after ${report.warmup}× as many untimed ones run by the same consumers, the clock
until every queue drained; ${report.reps} repetition(s), the order of the deployments rotating per repetition.
Costs are summed over the nodes: \`INFO commandstats\` calls (inside scripts too, the bench's own
\`INFO\`/\`CONFIG\`/\`CLIENT LIST\` left out) and \`INFO cpu\` per job; MOVED / ASK are the redirections the
nodes answered (\`INFO errorstats\`) in the timed parts, summed over the repetitions. Connections:
\`CLIENT LIST\` per node (the bench's own left out) while the consumers ran minus before they started
(each consumer has its own \`EchoMqConnection\`, as a separate process would), and after they closed.
Ratios × standalone are the median of the per-repetition ratios [min–max].

${clusterTable(report)}
`;
}
