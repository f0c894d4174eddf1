/**
 * The shapes of a run's report and how its numbers are rounded, shown and compared.
 */
import type { FlowsReport } from './flows.js';
import type { ClusterReport } from './cluster.js';
import { SYSTEMS, SYSTEM_LABEL, type Metric, type SystemName } from './common.js';
import type { BenchSizes } from './sizes.js';
import { EVENTS_LOG_METRIC, GROUPS_METRIC, type AnchoredBusMetric, type BusAnchorMetric, type BusMetric } from './bus.js';
import type { CeilingReport, CeilingRow } from './ceiling.js';
import type { PairStat, Summary } from './pairs.js';
import type { PhaseResult } from './phases.js';
import type { CacheReport } from './cache-phases.js';
import type { CacheMetric } from './cache.js';

/** Any row of the report: a queue metric, a Bus metric, the lifecycle-log row, or a cache metric. */
export type AnyMetric = Metric | BusMetric | BusAnchorMetric | typeof EVENTS_LOG_METRIC | typeof GROUPS_METRIC | CacheMetric;

/** A Bus row's raw anchor: its median, and EchoMQ / raw as the median of the per-repetition ratios. */
export interface BusAnchorResult {
  readonly value: number;
  readonly ratio: PairStat;
}

/** The EchoMQ-only medians: the Bus rows, and the lifecycle-log row when it was measured. */
export interface EchoOnlyResults {
  readonly bus: Readonly<Record<BusMetric, number>>;
  /** The raw anchors of the Bus throughput rows that measured one (absent: not run). */
  readonly busAnchors: Readonly<Partial<Record<AnchoredBusMetric, BusAnchorResult>>> & {
    /** `bus_group_c1_per_s` against the raw loop reading COUNT 1 (`raw_group_c1_count1_per_s`), when measured. */
    readonly bus_group_c1_count1?: BusAnchorResult;
  };
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
  /** The 1-minute load average when the queue phases ended. */
  readonly loadAvgEnd?: number;
  readonly versions: Readonly<Record<'echomq' | 'bullmq' | 'beequeue' | 'ioredis' | 'iovalkey' | 'bentocache', string>>;
}

/** One phase's outcome for one system, as recorded for the report. */
export interface PhaseRecord extends PhaseResult {
  readonly phase: string;
  readonly system: SystemName;
  /** Which repetition of the suite (0-based). */
  readonly rep: number;
  /** EchoMQ's runs of the ceiling rows: the ceiling measured right after, at its claim size. */
  readonly ceiling?: CeilingRow;
  /** How the cost table names the system of this record (default its `SYSTEM_LABEL`; e.g. a raw anchor). */
  readonly systemLabel?: string;
}

/** Everything a report is made of. */
export interface Report extends Summary {
  /** The medians of the EchoMQ-only rows (no BullMQ equivalent). */
  readonly echoOnly: EchoOnlyResults;
  /** Every phase of every repetition. */
  readonly records: readonly PhaseRecord[];
  /** The runs of pairs measured again because one of their runs was noisy (not in `records`). */
  readonly superseded: readonly PhaseRecord[];
  readonly env: Environment;
  readonly sizes: BenchSizes;
  /** The Valkey ceiling (valkey-benchmark on the claim + complete scripts). */
  readonly ceiling: CeilingReport;
  /** The cache rows (EchoMQ vs bentocache), medians and every repetition. */
  readonly cache: CacheReport;
  /** The flows rows (EchoMQ vs BullMQ's FlowProducer). */
  readonly flows: FlowsReport;
  /** The cluster rows (EchoMQ on standalone, 1-primary and 3-primary clusters); absent when not run. */
  readonly cluster?: ClusterReport;
  /** Wall seconds of the whole run. */
  readonly seconds: number;
}

/** A value rounded for the JSON file and the table. */
export function rounded(m: AnyMetric, v: number): number {
  if (m.endsWith('_per_s')) return Math.round(v);
  if (m.startsWith('bytes')) return Math.round(v * 10) / 10;
  return Math.round(v * 1000) / 1000;
}

/** A value as the table shows it ("—" when not measured). */
export function shown(m: AnyMetric, v: number | undefined): string {
  if (v === undefined || Number.isNaN(v)) return '—';
  const r = rounded(m, v);
  return m.endsWith('_per_s') ? r.toLocaleString('en-US') : String(r);
}

/** The per-job cost table of `records` (one row per phase and system that has a cost), as Markdown. */
export function costTable(records: readonly PhaseRecord[], unit = 'job', systems: readonly SystemName[] = SYSTEMS): string {
  const fmt = (v: number | undefined, d = 1): string => (v === undefined ? '—' : v.toFixed(d));
  const u = unit;
  const lines = [
    `| Phase | System | Wall s | Wall µs/${u} | Client CPU µs/${u} | Valkey CPU µs/${u} | in scripts µs/${u} | Script calls/${u} | Valkey commands/${u} | Valkey busy | Machine · other CPU (cores) | Load (1 min) |`,
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const phase of new Set(records.map((r) => r.phase))) {
    for (const system of systems) {
      const rec = records.find((x) => x.phase === phase && x.system === system);
      const c = rec?.cost;
      if (!c) continue;
      const busy = c.valkeyBusy === undefined ? '—' : `${Math.round(c.valkeyBusy * 100)}%`;
      const other = c.load?.otherCores === undefined ? '—' : `${fmt(c.load.machineCores, 2)} · ${fmt(c.load.otherCores, 2)}${c.load.noisy ? ' ⚠' : ''}`;
      lines.push(
        `| ${phase} | ${rec.systemLabel ?? SYSTEM_LABEL[system]} | ${fmt(c.seconds, 2)} | ${fmt(c.wallUsPerJob)} | ${fmt(c.clientUsPerJob)} | ${fmt(c.serverUsPerJob)} | ${fmt(c.scriptUsPerJob)} | ${fmt(c.scriptsPerJob, 3)} | ${fmt(c.commandsPerJob)} | ${busy} | ${other} | ${fmt(c.load?.loadAvg1, 2)} |`,
      );
    }
  }
  return lines.join('\n');
}

/** The median, where the phases of other suites import it from. */
export { median } from './pairs.js';
