/**
 * The shapes of a run's report and how its numbers are rounded, shown and compared.
 */
import { METRICS, lowerIsBetter, type BenchSizes, type Metric, type Results, type SystemName } from './common.js';
import type { PhaseResult } from './phases.js';

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
  readonly versions: Readonly<Record<'echomq' | 'bullmq' | 'ioredis' | 'iovalkey', string>>;
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
  /** Every phase of every repetition. */
  readonly records: readonly PhaseRecord[];
  /** Per phase and system, the repetition whose value is the median (for the cost table). */
  readonly medianRecords: readonly PhaseRecord[];
  readonly env: Environment;
  readonly sizes: BenchSizes;
  /** Wall seconds of the whole run. */
  readonly seconds: number;
}

/** A value rounded for the JSON file and the table. */
export function rounded(m: Metric, v: number): number {
  if (m.endsWith('_per_s')) return Math.round(v);
  if (m.startsWith('bytes')) return Math.round(v * 10) / 10;
  return Math.round(v * 1000) / 1000;
}

/** A value as the table shows it. */
export function shown(m: Metric, v: number): string {
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

/**
 * Reduces every repetition to one value per metric and system (the median), and picks, per
 * phase and system, the repetition whose first metric is that median.
 */
export function summarize(records: readonly PhaseRecord[]): Pick<Report, 'results' | 'medianRecords'> {
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
  return { results, medianRecords };
}
