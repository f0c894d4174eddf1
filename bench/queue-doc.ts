/**
 * The queue tables of `docs/benchmarks.md` and of the console: the medians of the three systems,
 * the per-pair ratios with their min–max, how close each system came to the Valkey ceiling, the
 * noisy phases, and the issue's targets met or missed.
 */
import { METRICS, SYSTEMS, SYSTEM_LABEL, lowerIsBetter, type AnchorName, type Metric, type SystemName } from './common.js';
import { nearestCeiling, type CeilingReport, type CeilingRow } from './ceiling.js';
import { shown, type PhaseRecord } from './format.js';
import { pairText, type PairStat, type Summary } from './pairs.js';

/** Why an anchor has no figure on a row (it lacks the feature). */
export const NO_EQUIVALENT: Readonly<Partial<Record<Metric, Partial<Record<SystemName, string>>>>> = {
  process_c1_prefetch0_per_s: { beequeue: 'no prefetch: see c1' },
  process_c50_prio_per_s: { beequeue: 'no priorities' },
};

/** The rows whose rate is compared with the ceiling (the plain claim path, many jobs per claim). */
export const CEILING_ROWS: ReadonlySet<Metric> = new Set([
  'process_c10_per_s',
  'process_c50_per_s',
  'process_c200_per_s',
  'process_2x50_per_s',
  'process_c50_backlog_10k_per_s',
  'process_c50_backlog_100k_per_s',
  'process_c50_backlog_1m_per_s',
]);

/** The phase label of a metric in `records` (the phase that measured it). */
function phaseOf(records: readonly PhaseRecord[], m: Metric): string | undefined {
  return records.find((r) => m in r.values)?.phase;
}

/**
 * The ceiling row to compare `m` with: the claim size nearest EchoMQ's own jobs per claim in
 * that phase. The consumer claims and completes in one `round.lua` call per round (the ceiling's
 * wrapper does the same in one call), so its jobs per claim are 1 / script calls per job (a c50
 * run counts ~48 jobs per round call; see docs/benchmarks.md, "The Valkey ceiling").
 */
export function ceilingFor(s: Summary, ceiling: CeilingReport, m: Metric): CeilingRow | undefined {
  if (!CEILING_ROWS.has(m)) return undefined;
  const phase = phaseOf(s.medianRecords, m);
  const spj = s.medianRecords.find((r) => r.system === 'echomq' && r.phase === phase)?.cost?.scriptsPerJob;
  return spj && spj > 0 ? nearestCeiling(ceiling, 1 / spj) : undefined;
}

/** A share as `72%`, with ` [65–80%]` when there are several repetitions. */
function shareText(p: PairStat): string {
  const pct = (x: number): number => Math.round(x * 100);
  return p.pairs > 1 ? `${pct(p.median)}% [${pct(p.min)}–${pct(p.max)}%]` : `${pct(p.median)}%`;
}

function ceilingCell(s: Summary, ceiling: CeilingReport, m: Metric): string {
  const share = s.shares[m];
  if (share) {
    const parts = SYSTEMS.flatMap((sys) => {
      const p = share.bySystem[sys];
      return p ? [`${SYSTEM_LABEL[sys]} ${shareText(p)}`] : [];
    });
    return `${parts.join(' · ')} of ${Math.round(share.ceilingPerS).toLocaleString('en-US')}/s (×${share.batch}, beside each run)`;
  }
  const row = ceilingFor(s, ceiling, m);
  if (!row) return '';
  const pct = SYSTEMS.map((sys) => {
    const v = s.results[sys][m];
    return v === undefined ? undefined : `${SYSTEM_LABEL[sys]} ${Math.round((100 * v) / row.jobsPerS)}%`;
  }).filter((x) => x !== undefined);
  return `${pct.join(' · ')} of ${Math.round(row.jobsPerS).toLocaleString('en-US')}/s (×${row.batch})`;
}

function valueCell(s: Summary, sys: SystemName, m: Metric): string {
  const v = s.results[sys][m];
  if (v !== undefined) return shown(m, v);
  return NO_EQUIVALENT[m]?.[sys] ?? 'not run';
}

function noiseCell(s: Summary, m: Metric): string {
  const n = s.noise[m];
  if (!n) return '';
  return n.noisy === 0 ? 'quiet' : `⚠ ${n.noisy}/${n.runs} noisy`;
}

/** The metrics at least one system measured. */
export function measured(s: Summary): Metric[] {
  return METRICS.filter((m) => SYSTEMS.some((sys) => s.results[sys][m] !== undefined));
}

/** The headline queue table as Markdown. */
export function queueTable(s: Summary, ceiling: CeilingReport): string {
  const lines = [
    '| Metric | EchoMQ | BullMQ | bee-queue | EchoMQ / BullMQ | EchoMQ / bee-queue | Share of the Valkey ceiling | Phases |',
    '|---|---:|---:|---:|---:|---:|---|---|',
  ];
  for (const m of measured(s)) {
    const p = s.pairs[m] ?? {};
    const cells = [`\`${m}\``, valueCell(s, 'echomq', m), valueCell(s, 'bullmq', m), valueCell(s, 'beequeue', m), pairText(p.bullmq), pairText(p.beequeue)];
    lines.push(`| ${cells.join(' | ')} | ${ceilingCell(s, ceiling, m)} | ${noiseCell(s, m)} |`);
  }
  return lines.join('\n');
}

/** The same table for the console (plain columns). */
export function queueConsoleTable(s: Summary): string {
  const head = ['metric', 'echomq', 'bullmq', 'bee-queue', 'echomq/bullmq', 'echomq/bee-queue', 'phases'];
  const rows = measured(s).map((m) => {
    const p = s.pairs[m] ?? {};
    return [m, valueCell(s, 'echomq', m), valueCell(s, 'bullmq', m), valueCell(s, 'beequeue', m), pairText(p.bullmq), pairText(p.beequeue), noiseCell(s, m)];
  });
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  ');
  return `${line(head)}\n${w.map((n) => '-'.repeat(n)).join('  ')}\n${rows.map(line).join('\n')}`;
}

/** One target of issue 13: a ratio (or ceiling share) that EchoMQ should reach on a row. */
interface Target {
  readonly text: string;
  readonly metric: Metric;
  /** Against an anchor's per-pair median ratio, or the ceiling share. */
  readonly against: AnchorName | 'ceiling';
  /** The ratio to reach: at least it (higher-is-better rows) or at most it (lower-is-better rows). */
  readonly goal: number;
}

const TARGETS: readonly Target[] = [
  { text: 'process c50 ≥ 3.5× BullMQ', metric: 'process_c50_per_s', against: 'bullmq', goal: 3.5 },
  { text: 'process c50 ≥ 75% of the Valkey ceiling', metric: 'process_c50_per_s', against: 'ceiling', goal: 0.75 },
  { text: 'c1 with `prefetch: 0` ≥ 1.5× BullMQ', metric: 'process_c1_prefetch0_per_s', against: 'bullmq', goal: 1.5 },
  { text: "single enqueue ≥ bee-queue's", metric: 'enqueue_single_per_s', against: 'beequeue', goal: 1 },
  { text: "single enqueue ≥ 2.5× BullMQ's", metric: 'enqueue_single_per_s', against: 'bullmq', goal: 2.5 },
  { text: 'batch enqueue ≥ 5× BullMQ', metric: 'enqueue_batch_per_s', against: 'bullmq', goal: 5 },
  { text: "latency p50 ≤ bee-queue's at 500/s", metric: 'latency_p50_ms', against: 'beequeue', goal: 1 },
  { text: "latency p99 ≤ ½ BullMQ's", metric: 'latency_p99_ms', against: 'bullmq', goal: 0.5 },
];

/** The targets of issue 13 on the queue rows, each met or missed (by how much), as Markdown bullets. */
export function targetsList(s: Summary, ceiling: CeilingReport): string {
  return TARGETS.map((t) => {
    const lower = lowerIsBetter(t.metric);
    let got: number | undefined;
    let shownGot = '';
    const share = t.against === 'ceiling' ? s.shares[t.metric]?.bySystem.echomq : undefined;
    if (share) {
      got = share.median;
      const c = s.shares[t.metric]!;
      shownGot = `${shareText(share)} of the ceiling measured beside each run (median ${shown(t.metric, c.ceilingPerS)} at ×${c.batch})`;
    } else if (t.against === 'ceiling') {
      const row = ceilingFor(s, ceiling, t.metric);
      const v = s.results.echomq[t.metric];
      if (row && v !== undefined) {
        got = v / row.jobsPerS;
        shownGot = `${Math.round(got * 100)}% (${shown(t.metric, v)} of ${shown(t.metric, row.jobsPerS)} at ×${row.batch})`;
      }
    } else {
      const p = s.pairs[t.metric]?.[t.against];
      got = p?.median;
      shownGot = pairText(p);
    }
    if (got === undefined) return `- ${t.text}: not measured in this run.`;
    const met = lower ? got <= t.goal : got >= t.goal;
    // How far off: the share short of a floor, or how far above a ceiling.
    const off = lower ? `${(got / t.goal).toFixed(2)}× the allowed value` : `${Math.round((1 - got / t.goal) * 100)}% short`;
    return `- ${t.text}: ${shownGot} — **${met ? 'met' : `missed (${off})`}**.`;
  }).join('\n');
}
