/**
 * The targets of issue 41, each computed from a run's report: the "Targets (issue 41)" section of
 * `docs/benchmarks.md` and its compact console form. A target is met, missed (by how much, with a
 * link to where its bound is measured and written), only measured (no numeric target) or not run.
 */
import { SYSTEM_LABEL, type AnchorName, type Metric } from './common.js';
import { BUS_ANCHORS, BUS_READ_AHEAD, type AnchoredBusMetric } from './bus.js';
import { RAW_READ_COUNT } from './bus-raw.js';
import { CACHE_TARGETS } from './cache-doc.js';
import { summarizeCluster, type ClusterSummaryRow } from './cluster.js';
import { shown, type Report } from './format.js';
import { pairText, type PairStat } from './pairs.js';
import type { PhaseCost } from './probe.js';

/** Where the bound of a missed target is measured and written (a Markdown link from docs/). */
export interface Bound41 {
  readonly label: string;
  readonly href: string;
}

/** One line of the section. */
export interface Check41 {
  readonly target: string;
  /** The figure(s) the verdict rests on ('—' when not run). */
  readonly measured: string;
  /** `met`, `missed (…)`, `measured` (no numeric target) or `not run`. */
  readonly verdict: string;
  /** For a miss: where its bound is measured and written. */
  readonly bound?: Bound41;
}

/** The pages that measure and explain what bounds each group of targets. */
export const BOUNDS_41 = {
  light: { label: 'bounds.md, Light load', href: 'bounds.md#light-load-where-the-time-goes' },
  bus: { label: 'bus.md, Performance', href: 'bus.md#performance' },
  flows: { label: 'flows.md, Performance', href: 'flows.md#performance' },
  lag: { label: 'cache.md, Invalidation lag', href: 'cache.md#invalidation-lag' },
  cache: { label: 'Cache, trade-offs (below)', href: '#cache-echomq-vs-bentocache' },
  cluster: { label: 'deployment.md, Scaling over a cluster', href: 'deployment.md#scaling-over-a-cluster' },
} as const satisfies Record<string, Bound41>;

/** The quick run's budget (issue 41: `npm run bench -- --quick` under 5 minutes). */
const QUICK_BUDGET_S = 300;

const notRun = (target: string, measured = '—'): Check41 => ({ target, measured, verdict: 'not run' });

/**
 * A check of `got` against `goal`: at most it when `lower`, else at least it (`met` overrides the
 * comparison where a target states its own, e.g. a strict bound); a miss says by how much.
 */
function judge(target: string, measured: string, got: number | undefined, goal: number, lower: boolean, bound: Bound41, met?: boolean): Check41 {
  if (got === undefined || !Number.isFinite(got)) return notRun(target);
  const ok = met ?? (lower ? got <= goal : got >= goal);
  if (ok) return { target, measured, verdict: 'met' };
  const off = lower ? `${(got / goal).toFixed(2)}× the allowed value` : `${Math.round((1 - got / goal) * 100)}% short`;
  return { target, measured, verdict: `missed (${off})`, bound };
}

/** A queue row's per-pair ratio against `anchor`, checked against `goal` (lower is better on these rows). */
function pairCheck(report: Report, target: string, m: Metric, anchor: AnchorName, goal: number, bound: Bound41): Check41 {
  const p: PairStat | undefined = report.pairs[m]?.[anchor];
  const measured = `${pairText(p)} (EchoMQ ${shown(m, report.results.echomq[m])} ms, ${SYSTEM_LABEL[anchor]} ${shown(m, report.results[anchor][m])} ms)`;
  return judge(target, measured, p?.median, goal, true, bound);
}

/** The light-load rows: p50 and p99 against bee-queue, p99 against half of BullMQ, at both rates. */
function latencyChecks(report: Report): Check41[] {
  const rates = [
    { rate: '500/s', p50: 'latency_p50_ms', p99: 'latency_p99_ms' },
    { rate: '5,000/s', p50: 'latency_5k_p50_ms', p99: 'latency_5k_p99_ms' },
  ] as const;
  return rates.flatMap(({ rate, p50, p99 }) => [
    pairCheck(report, `latency p50 at ${rate} ≤ bee-queue's`, p50, 'beequeue', 1, BOUNDS_41.light),
    pairCheck(report, `latency p99 at ${rate} ≤ bee-queue's`, p99, 'beequeue', 1, BOUNDS_41.light),
    pairCheck(report, `latency p99 at ${rate} ≤ ½ BullMQ's`, p99, 'bullmq', 0.5, BOUNDS_41.light),
  ]);
}

/** Valkey commands and script calls per job at 500/s against bee-queue's, from the median records of the latency phase. */
function costChecks(report: Report): Check41[] {
  const cost = (system: 'echomq' | 'beequeue'): PhaseCost | undefined => report.medianRecords.find((r) => r.system === system && 'latency_p50_ms' in r.values)?.cost;
  const e = cost('echomq');
  const b = cost('beequeue');
  const fields = [
    { target: "Valkey commands per job at 500/s ≤ bee-queue's", of: (c: PhaseCost) => c.commandsPerJob, digits: 1 },
    { target: "script calls per job at 500/s ≤ bee-queue's", of: (c: PhaseCost) => c.scriptsPerJob, digits: 3 },
  ];
  return fields.map(({ target, of, digits }) => {
    if (!e || !b) return notRun(target);
    const ratio = of(e) / of(b);
    return judge(target, `EchoMQ ${of(e).toFixed(digits)}, bee-queue ${of(b).toFixed(digits)} (${ratio.toFixed(2)}×)`, ratio, 1, true, BOUNDS_41.light);
  });
}

/** The Bus throughput rows against their raw Streams anchors (≥ 85%), the COUNT 1 loop and the lifecycle fan-out (measured only). */
function busChecks(report: Report): Check41[] {
  const anchors = report.echoOnly.busAnchors;
  const rows: readonly [AnchoredBusMetric, string][] = [
    ['bus_group_c1_per_s', 'Bus group c1 ≥ 85% of a raw Streams consumer group'],
    ['bus_group_c1_prefetch50_per_s', `Bus group c1 with \`prefetch: ${BUS_READ_AHEAD}\` ≥ 85% of raw (COUNT ${RAW_READ_COUNT})`],
    ['bus_group_c50_per_s', 'Bus group c50 ≥ 85% of a raw Streams consumer group'],
    ['bus_publish_single_per_s', 'Bus publish single ≥ 85% of raw `XADD`s'],
    ['bus_publish_batch_per_s', 'Bus publish batch ≥ 85% of raw `XADD` pipelines'],
  ];
  const out = rows.map(([m, target]) => {
    const a = anchors[m];
    if (!a) return notRun(target);
    const measured = `${pairText(a.ratio)} (EchoMQ ${shown(m, report.echoOnly.bus[m])}/s, raw ${shown(BUS_ANCHORS[m], a.value)}/s)`;
    return judge(target, measured, a.ratio.median, 0.85, false, BOUNDS_41.bus);
  });
  const c1 = anchors.bus_group_c1_count1;
  const c1Target = 'Bus group c1 against a raw loop reading `COUNT 1` (no target)';
  out.push(c1 ? { target: c1Target, measured: `${pairText(c1.ratio)} (raw ${Math.round(c1.value).toLocaleString('en-US')}/s)`, verdict: 'measured' } : notRun(c1Target));
  const f = 'fanout_completed_x4_per_s';
  const fp = report.pairs[f]?.bullmq;
  const fTarget = "lifecycle fan-out (`completed` to 4 listeners) against BullMQ's `QueueEvents` (no target)";
  out.push(fp ? { target: fTarget, measured: `${pairText(fp)} (EchoMQ ${shown(f, report.results.echomq[f])}/s, BullMQ ${shown(f, report.results.bullmq[f])}/s)`, verdict: 'measured' } : notRun(fTarget));
  return out;
}

/** Flows against BullMQ's FlowProducer: saturated flows/s ≥ 3×, fan-in p99 ≤ ⅓ (saturated and paced); ratios of the per-system medians. */
function flowsChecks(report: Report): Check41[] {
  const get = (saturated: boolean, system: 'echomq' | 'bullmq') => report.flows.rows.find((r) => (r.run === 'saturated') === saturated && r.system === system)?.m;
  const out: Check41[] = [];
  const es = get(true, 'echomq');
  const bs = get(true, 'bullmq');
  const sat = "flows/s saturated ≥ 3× BullMQ's FlowProducer";
  out.push(es && bs ? judge(sat, `${(es.flowsPerSec / bs.flowsPerSec).toFixed(2)}× (EchoMQ ${es.flowsPerSec}, BullMQ ${bs.flowsPerSec} flows/s)`, es.flowsPerSec / bs.flowsPerSec, 3, false, BOUNDS_41.flows) : notRun(sat));
  for (const saturated of [true, false]) {
    const e = get(saturated, 'echomq');
    const b = get(saturated, 'bullmq');
    const run = saturated ? 'saturated' : (report.flows.rows.find((r) => r.run !== 'saturated')?.run ?? 'paced');
    const target = `fan-in p99 ${run} ≤ ⅓ of BullMQ's`;
    if (!e || !b) {
      out.push(notRun(target));
      continue;
    }
    const ratio = e.fanInP99 / b.fanInP99;
    out.push(judge(target, `${ratio.toFixed(2)}× (EchoMQ ${e.fanInP99.toFixed(2)} ms, BullMQ ${b.fanInP99.toFixed(2)} ms)`, ratio, 1 / 3, true, BOUNDS_41.flows));
  }
  return out;
}

/** The cache targets of issue 41, judged by the Cache section's own rules (`CACHE_TARGETS`). */
function cacheChecks(report: Report): Check41[] {
  const r = report.cache.results;
  const lag = 'cache_invalidation_lag_p99_ms';
  const l2 = 'cache_l2_hit_per_s';
  const lagE = r.echomq[lag];
  const l2E = r.echomq[l2];
  const l2B = r.bentocache[l2];
  return [
    judge(`cache invalidation lag p99 ${CACHE_TARGETS[lag]?.text}`, `${shown(lag, lagE)} ms (bentocache ${shown(lag, r.bentocache[lag])} ms)`, lagE, 5, true, BOUNDS_41.lag, CACHE_TARGETS[lag]?.met(lagE, r.bentocache[lag])),
    judge(`cache L2 hit ${CACHE_TARGETS[l2]?.text}`, `${(l2E / l2B).toFixed(2)}× (EchoMQ ${shown(l2, l2E)}/s, bentocache ${shown(l2, l2B)}/s)`, l2E / l2B, 1.5, false, BOUNDS_41.cache, CACHE_TARGETS[l2]?.met(l2E, l2B)),
  ];
}

/** The cluster cost per job × standalone (≤ 1.10, every shape) on each cluster, and the connections one consumer's process adds per node. */
function clusterChecks(report: Report): Check41[] {
  const costs = [
    { what: 'Valkey commands/job', key: 'commands' },
    { what: 'Valkey CPU µs/job', key: 'valkeyUs' },
  ] as const;
  const topologies = [
    { t: 'cluster-1', name: '1-primary' },
    { t: 'cluster-3', name: '3-primary' },
  ] as const;
  const conns = 'connections per process (added per node by one consumer of one queue; no target)';
  const targets = topologies.flatMap(({ name }) => costs.map(({ what }) => `${what} on a ${name} cluster within 10% of standalone`));
  if (!report.cluster) return [...targets.map((t) => notRun(t)), notRun(conns)];
  const rows: ClusterSummaryRow[] = summarizeCluster(report.cluster);
  const out = topologies.flatMap(({ t, name }) =>
    costs.map(({ what, key }) => {
      const stats = rows.filter((r) => r.topology === t).map((r) => ({ shape: r.shape, p: r.vsStandalone?.[key] }));
      const worst = stats.every((s) => s.p) && stats.length > 0 ? Math.max(...stats.map((s) => s.p!.median)) : undefined;
      const measured = stats.map((s) => `${s.shape} ${pairText(s.p)}`).join(' · ');
      return judge(`${what} on a ${name} cluster within 10% of standalone`, measured || '—', worst, 1.1, true, BOUNDS_41.cluster);
    }),
  );
  const one = rows.filter((r) => r.shape === rows[0]?.shape);
  out.push(one.length > 0 ? { target: conns, measured: one.map((r) => `${r.topology} ${r.connsAdded.join(' / ')}`).join(' · '), verdict: 'measured' } : notRun(conns));
  return out;
}

/** The quick run under 5 minutes (judged on a quick run only; the builds come on top). */
function quickCheck(report: Report): Check41 {
  const target = '`npm run bench -- --quick` under 5 minutes';
  const s = Math.round(report.seconds);
  if (!report.env.quick) return notRun(target, `this was the full run (${s} s); judged on a quick run`);
  return judge(target, `${s} s (the run, without the builds)`, report.seconds, QUICK_BUDGET_S, true, { label: 'Method, counts per run', href: '#method' });
}

/** Every issue-41 check of `report`, in the issue's order. */
export function checks41(report: Report): Check41[] {
  return [...latencyChecks(report), ...costChecks(report), ...busChecks(report), ...flowsChecks(report), ...cacheChecks(report), ...clusterChecks(report), quickCheck(report)];
}

/** The "## Targets (issue 41)" section of `docs/benchmarks.md`. */
export function targets41Section(report: Report): string {
  const lines = ['| target | measured | verdict | bound (for a miss) |', '|---|---|---|---|'];
  for (const c of checks41(report)) {
    const verdict = c.verdict === 'met' || c.verdict.startsWith('missed') ? `**${c.verdict}**` : c.verdict;
    lines.push(`| ${c.target} | ${c.measured} | ${verdict} | ${c.bound ? `[${c.bound.label}](${c.bound.href})` : '—'} |`);
  }
  return `## Targets (issue 41)

Each target of issue 41, computed from this run. Ratios are EchoMQ / the anchor: on the paired rows
(queue latency against BullMQ and bee-queue, the Bus against its raw Streams anchor, a cluster against
standalone) the median of the per-pair ratios [min–max]; on the flows, cache and cost-per-job rows the
ratio of the two medians. A cluster cost line is met when every shape's median is at most 1.10×. For a
miss, the last column links to where what bounds it is measured and written.

${lines.join('\n')}
`;
}

/** The same checks as plain console lines (printed at the end of a run). */
export function targets41Console(report: Report): string {
  const checks = checks41(report);
  const w = Math.max(...checks.map((c) => c.target.length));
  const v = Math.max(...checks.map((c) => c.verdict.length));
  const lines = checks.map((c) => `${c.target.padEnd(w)}  ${c.verdict.padEnd(v)}  ${c.measured}${c.bound ? `  → ${c.bound.href}` : ''}`);
  return `Targets (issue 41):\n${lines.join('\n')}`;
}
