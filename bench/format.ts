/**
 * The shapes of a run's report and how its numbers are rounded, shown and compared.
 */
import type { FlowsReport } from './flows.js';
import { METRICS, lowerIsBetter, type BenchSizes, type Metric, type Results, type SystemName } from './common.js';
import { BUS_METRICS, EVENTS_LOG_METRIC, GROUPS_METRIC, type BusMetric } from './bus.js';
import type { PhaseResult } from './phases.js';
import type { CacheReport } from './cache-phases.js';
import type { CacheMetric } from './cache.js';

/** Any row of the report: a queue metric, a Bus metric, the lifecycle-log row, or a cache metric. */
export type AnyMetric = Metric | BusMetric | typeof EVENTS_LOG_METRIC | typeof GROUPS_METRIC | CacheMetric;

/** The EchoMQ-only medians: the Bus rows, and the lifecycle-log row when it was measured. */
export interface EchoOnlyResults {
  readonly bus: Readonly<Record<BusMetric, number>>;
  /** `process_c50_events_log_per_s`; absent when this build's queue has no `eventsLog` option. */
  readonly eventsLog?: number;
  /** `process_c50_groups_per_s` (fair lanes over 100 groups); absent when not measured. */
  readonly groups?: number;
}

/** The machine and software a run measured on. */
export interface Environment {
  readonly date: string;
  readonly quick: boolean;
  readonly nproc: number;
  readonly cpuModel: string;
  readonly memGiB: number;
  readonly node: string;
  readonly valkey: string;
  /** The 1-minute load average when the run started (other work on the machine skews results). */
  readonly loadAvg: number;
  readonly versions: Readonly<Record<'echomq' | 'bullmq' | 'ioredis' | 'iovalkey' | 'bentocache', string>>;
}

/** One phase's outcome for one system, as recorded for the report. */
export interface PhaseRecord extends PhaseResult {
  readonly phase: string;
  readonly system: SystemName;
  /** Which repetition of the suite (0-based). */
  readonly rep: number;
}

/** Everything a report is made of. */
export interface Report {
  /** The median over the repetitions of each metric. */
  readonly results: Readonly<Record<SystemName, Results>>;
  /** The medians of the EchoMQ-only rows (no BullMQ equivalent). */
  readonly echoOnly: EchoOnlyResults;
  /** Every phase of every repetition. */
  readonly records: readonly PhaseRecord[];
  /** Per phase and system, the repetition whose value is the median (for the cost table). */
  readonly medianRecords: readonly PhaseRecord[];
  readonly env: Environment;
  readonly sizes: BenchSizes;
  /** The cache rows (EchoMQ vs bentocache), medians and every repetition. */
  readonly cache: CacheReport;
  /** The flows rows (EchoMQ vs BullMQ's FlowProducer). */
  readonly flows: FlowsReport;
  /** Wall seconds of the whole run. */
  readonly seconds: number;
}

/** A value rounded for the JSON file and the table. */
export function rounded(m: AnyMetric, v: number): number {
  if (m.endsWith('_per_s')) return Math.round(v);
  if (m.startsWith('bytes')) return Math.round(v * 10) / 10;
  return Math.round(v * 1000) / 1000;
}

/** A value as the table shows it. */
export function shown(m: AnyMetric, v: number): string {
  const r = rounded(m, v);
  return m.endsWith('_per_s') ? r.toLocaleString('en-US') : String(r);
}

/** EchoMQ / BullMQ of one metric, with whether EchoMQ is better on it. */
export function ratio(results: Report['results'], m: Metric): { text: string; echoBetter: boolean } {
  const r = results.echomq[m] / results.bullmq[m];
  const echoBetter = lowerIsBetter(m) ? r < 1 : r > 1;
  return { text: `${r.toFixed(2)}×`, echoBetter };
}

/** The results table as Markdown rows. */
export function markdownTable(results: Report['results']): string {
  const lines = ['| Metric | EchoMQ | BullMQ | EchoMQ / BullMQ | Better |', '|---|---:|---:|---:|---|'];
  for (const m of METRICS) {
    const q = ratio(results, m);
    const better = lowerIsBetter(m) ? 'lower' : 'higher';
    lines.push(`| \`${m}\` | ${shown(m, results.echomq[m])} | ${shown(m, results.bullmq[m])} | ${q.text} | ${better}: ${q.echoBetter ? 'EchoMQ' : 'BullMQ'} |`);
  }
  return lines.join('\n');
}

/** The median of `xs` (the lower middle for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
}

/** The median of `metric` over the EchoMQ records that measured it (undefined if none did). */
function echoMedian(records: readonly PhaseRecord[], metric: AnyMetric): number | undefined {
  const values = records.filter((r) => r.system === 'echomq' && metric in r.values).map((r) => r.values[metric]);
  return values.length === 0 ? undefined : median(values);
}

/**
 * Reduces every repetition to one value per metric and system (the median), and picks, per
 * phase and system, the repetition whose first metric is that median.
 */
export function summarize(records: readonly PhaseRecord[]): Pick<Report, 'results' | 'echoOnly' | 'medianRecords'> {
  const results = { echomq: {}, bullmq: {} } as Record<SystemName, Results>;
  const medianRecords: PhaseRecord[] = [];
  for (const system of ['echomq', 'bullmq'] as const) {
    const mine = records.filter((r) => r.system === system);
    for (const m of METRICS) {
      const values = mine.filter((r) => m in r.values).map((r) => r.values[m]);
      if (values.length === 0) throw new Error(`metric ${m} of ${system} was not measured`);
      results[system][m] = median(values);
    }
    for (const phase of new Set(mine.map((r) => r.phase))) {
      const reps = mine.filter((r) => r.phase === phase);
      const first = Object.keys(reps[0].values)[0];
      const mid = median(reps.map((r) => r.values[first]));
      medianRecords.push(reps.find((r) => r.values[first] === mid) ?? reps[0]);
    }
  }
  const bus = {} as Record<BusMetric, number>;
  for (const m of BUS_METRICS) {
    const v = echoMedian(records, m);
    if (v === undefined) throw new Error(`metric ${m} of the bus was not measured`);
    bus[m] = v;
  }
  return { results, echoOnly: { bus, eventsLog: echoMedian(records, EVENTS_LOG_METRIC), groups: echoMedian(records, GROUPS_METRIC) }, medianRecords };
}

/** The per-job cost table of `records` (one row per phase and system that has a cost), as Markdown. */
export function costTable(records: readonly PhaseRecord[], unit = 'job'): string {
  const fmt = (v: number, d = 1): string => v.toFixed(d);
  const u = unit;
  const lines = [
    `| Phase | System | Wall s | Wall µs/${u} | Client CPU µs/${u} | Valkey CPU µs/${u} | in scripts µs/${u} | Script calls/${u} | Valkey commands/${u} |`,
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const phase of new Set(records.map((r) => r.phase))) {
    for (const system of ['echomq', 'bullmq'] as const) {
      const c = records.find((x) => x.phase === phase && x.system === system)?.cost;
      if (!c) continue;
      lines.push(
        `| ${phase} | ${system} | ${fmt(c.seconds, 2)} | ${fmt(c.wallUsPerJob)} | ${fmt(c.clientUsPerJob)} | ${fmt(c.serverUsPerJob)} | ${fmt(c.scriptUsPerJob)} | ${fmt(c.scriptsPerJob, 3)} | ${fmt(c.commandsPerJob)} |`,
      );
    }
  }
  return lines.join('\n');
}
