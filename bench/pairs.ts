/**
 * Reducing the repetitions of a run: the median of each metric per system, and every ratio as
 * the median of the per-repetition pairs (EchoMQ and the anchor measured in the same repetition,
 * one right after the other) with the min–max of those pairs.
 */
import { ANCHORS, METRICS, SYSTEMS, type AnchorName, type Metric, type Results, type SystemName } from './common.js';
import type { PhaseRecord } from './format.js';

/** The per-pair ratios EchoMQ / anchor of one metric: their median, min and max. */
export interface PairStat {
  readonly median: number;
  readonly min: number;
  readonly max: number;
  /** How many pairs (repetitions where both systems measured the metric). */
  readonly pairs: number;
}

/** How many of a metric's phase runs (all systems, all repetitions) were noisy. */
export interface NoiseCount {
  readonly noisy: number;
  readonly runs: number;
}

/**
 * A metric's share of the Valkey ceiling measured beside each of EchoMQ's runs of it (the
 * `ceiling` of its records): per system, the per-repetition shares value / that ceiling.
 */
export interface CeilingShare {
  readonly bySystem: Partial<Record<SystemName, PairStat>>;
  /** The median of the paired ceilings (jobs/s). */
  readonly ceilingPerS: number;
  /** Their claim size (the most frequent one). */
  readonly batch: number;
}

/** The reduced run. */
export interface Summary {
  /** The median over the repetitions, per system and metric (absent: not run for that system). */
  readonly results: Readonly<Record<SystemName, Results>>;
  /** Per metric and anchor, the per-pair ratios EchoMQ / anchor. */
  readonly pairs: Readonly<Partial<Record<Metric, Partial<Record<AnchorName, PairStat>>>>>;
  /** Per metric, the noisy phase runs among all. */
  readonly noise: Readonly<Partial<Record<Metric, NoiseCount>>>;
  /** Per phase and system, the repetition whose value is the median (for the cost table). */
  readonly medianRecords: readonly PhaseRecord[];
  /** Per ceiling row, the shares of the ceiling measured beside each EchoMQ run. */
  readonly shares: Readonly<Partial<Record<Metric, CeilingShare>>>;
}

/**
 * The median of `xs`: for an even count the mean of the two middle values (the lower middle alone
 * would lean one way: conservative for a rate, flattering for a latency).
 */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** The stat of a list of ratios (undefined when empty). */
export function pairStat(ratios: readonly number[]): PairStat | undefined {
  if (ratios.length === 0) return undefined;
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios), pairs: ratios.length };
}

/** The per-repetition ratios EchoMQ / `anchor` of `metric` (same phase and repetition). */
export function pairRatios(records: readonly PhaseRecord[], metric: string, anchor: SystemName): number[] {
  const out: number[] = [];
  for (const e of records) {
    if (e.system !== 'echomq' || !(metric in e.values)) continue;
    const a = records.find((r) => r.system === anchor && r.phase === e.phase && r.rep === e.rep && metric in r.values);
    if (a) out.push(e.values[metric] / a.values[metric]);
  }
  return out;
}

/**
 * The per-repetition ratios `metric` / `anchorMetric` of `system`'s records that measured both in
 * one phase run (an anchor measured inside the same phase, as the Bus rows' raw loop is).
 */
export function withinRatios(records: readonly PhaseRecord[], metric: string, anchorMetric: string, system: SystemName = 'echomq'): number[] {
  return records.filter((r) => r.system === system && metric in r.values && anchorMetric in r.values).map((r) => r.values[metric] / r.values[anchorMetric]);
}

/**
 * The shares of `metric` of the ceilings measured beside EchoMQ's runs of it: each system's
 * value in a repetition over the ceiling of EchoMQ's run in that repetition (undefined when no
 * run of it carries a ceiling).
 */
export function ceilingShare(records: readonly PhaseRecord[], metric: string): CeilingShare | undefined {
  const own = records.filter((r) => r.system === 'echomq' && r.ceiling && metric in r.values);
  if (own.length === 0) return undefined;
  const bySystem: Partial<Record<SystemName, PairStat>> = {};
  for (const system of SYSTEMS) {
    const xs = own.flatMap((e) => {
      const x = records.find((r) => r.system === system && r.phase === e.phase && r.rep === e.rep && metric in r.values);
      return x ? [x.values[metric] / e.ceiling!.jobsPerS] : [];
    });
    const st = pairStat(xs);
    if (st) bySystem[system] = st;
  }
  const sizes = own.map((e) => e.ceiling!.batch);
  const batch = sizes.reduce((a, b) => (sizes.filter((x) => x === b).length > sizes.filter((x) => x === a).length ? b : a));
  return { bySystem, ceilingPerS: median(own.map((e) => e.ceiling!.jobsPerS)), batch };
}

/** The median of `metric` over `system`'s records that measured it (undefined if none did). */
export function metricMedian(records: readonly PhaseRecord[], system: SystemName | string, metric: string): number | undefined {
  const values = records.filter((r) => r.system === system && metric in r.values).map((r) => r.values[metric]);
  return values.length === 0 ? undefined : median(values);
}

/** Reduces every repetition of the queue phases. */
export function summarize(records: readonly PhaseRecord[]): Summary {
  const results = Object.fromEntries(SYSTEMS.map((s) => [s, {}])) as Record<SystemName, Results>;
  const pairs: Partial<Record<Metric, Partial<Record<AnchorName, PairStat>>>> = {};
  const noise: Partial<Record<Metric, NoiseCount>> = {};
  for (const m of METRICS) {
    for (const system of SYSTEMS) {
      const v = metricMedian(records, system, m);
      if (v !== undefined) results[system][m] = v;
    }
    for (const anchor of ANCHORS) {
      const stat = pairStat(pairRatios(records, m, anchor));
      if (stat) (pairs[m] ??= {})[anchor] = stat;
    }
    const runs = records.filter((r) => m in r.values && r.cost?.load?.otherCores !== undefined);
    if (runs.length > 0) noise[m] = { noisy: runs.filter((r) => r.cost?.load?.noisy).length, runs: runs.length };
  }
  const medianRecords: PhaseRecord[] = [];
  for (const system of SYSTEMS) {
    const mine = records.filter((r) => r.system === system);
    for (const phase of new Set(mine.map((r) => r.phase))) {
      const reps = mine.filter((r) => r.phase === phase);
      const first = Object.keys(reps[0].values)[0];
      const mid = median(reps.map((r) => r.values[first]));
      medianRecords.push(reps.find((r) => r.values[first] === mid) ?? reps[0]);
    }
  }
  const shares: Partial<Record<Metric, CeilingShare>> = {};
  for (const m of METRICS) {
    const share = ceilingShare(records, m);
    if (share) shares[m] = share;
  }
  return { results, pairs, noise, medianRecords, shares };
}

/** A pair stat as `2.08× [1.90–2.31]` (one pair: just the ratio). */
export function pairText(p: PairStat | undefined): string {
  if (!p) return '—';
  return p.pairs > 1 ? `${p.median.toFixed(2)}× [${p.min.toFixed(2)}–${p.max.toFixed(2)}]` : `${p.median.toFixed(2)}×`;
}
