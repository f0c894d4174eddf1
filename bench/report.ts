/**
 * Output of the benchmark: the environment it ran in, the console tables, `bench/results.json`,
 * and `docs/benchmarks.md` (its prose lives in `bench/doc.ts`); under `bench/out/` unless the run
 * refreshes the committed report (`--write`, `bench/output.ts`).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { ANCHORED_BUS_METRICS, BUS_ANCHORS, BUS_METRICS, EVENTS_LOG_METRIC, GROUPS_METRIC, type AnchoredBusMetric, type BusMetric } from './bus.js';
import { CACHE_METRICS } from './cache.js';
import { METRICS, SYSTEMS, type SystemName } from './common.js';
import { renderDoc } from './doc.js';
import { rounded, shown, type BusAnchorResult, type EchoOnlyResults, type Environment, type PhaseRecord, type Report } from './format.js';
import { metricMedian, pairStat, pairText, withinRatios, type Summary } from './pairs.js';
import type { Probe } from './probe.js';
import { queueConsoleTable } from './queue-doc.js';
import { repoPath, reportPath } from './output.js';
import { RAW_C1_COUNT1_METRIC } from './bus-raw.js';

/** The installed version of `pkg` (`.`: EchoMQ's): the bench's own copy first, then the hoisted one. */
const version = (pkg: string): string => {
  const candidates = pkg === '.' ? ['package.json'] : [`bench/node_modules/${pkg}/package.json`, `node_modules/${pkg}/package.json`];
  const path = candidates.map(repoPath).find((p) => existsSync(p));
  if (!path) throw new Error(`bench: ${pkg} is not installed (npm ci at the repository root)`);
  return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
};

/** Reads the machine, Node, Valkey and package versions. */
export async function environment(probe: Probe, quick: boolean): Promise<Environment> {
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    quick,
    nproc: cpus().length,
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    memGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    valkey: await probe.serverVersion(),
    loadAvg: loadavg()[0],
    versions: {
      echomq: version('.'),
      bullmq: version('bullmq'),
      beequeue: version('bee-queue'),
      ioredis: version('ioredis'),
      iovalkey: version('iovalkey'),
      bentocache: version('bentocache'),
    },
  };
}

/** The medians of the EchoMQ-only rows (the Bus; the lifecycle-log and groups rows when measured). */
export function echoOnlySummary(records: readonly PhaseRecord[]): EchoOnlyResults {
  const bus = {} as Record<BusMetric, number>;
  for (const m of BUS_METRICS) bus[m] = metricMedian(records, 'echomq', m) ?? Number.NaN;
  const busAnchors: Partial<Record<AnchoredBusMetric | 'bus_group_c1_count1', BusAnchorResult>> = {};
  for (const m of ANCHORED_BUS_METRICS) {
    const value = metricMedian(records, 'echomq', BUS_ANCHORS[m]);
    const ratio = pairStat(withinRatios(records, m, BUS_ANCHORS[m]));
    if (value !== undefined && ratio) busAnchors[m] = { value, ratio };
  }
  const count1 = metricMedian(records, 'echomq', RAW_C1_COUNT1_METRIC);
  const count1Ratio = pairStat(withinRatios(records, 'bus_group_c1_per_s', RAW_C1_COUNT1_METRIC));
  if (count1 !== undefined && count1Ratio) busAnchors.bus_group_c1_count1 = { value: count1, ratio: count1Ratio };
  return { bus, busAnchors, eventsLog: metricMedian(records, 'echomq', EVENTS_LOG_METRIC), groups: metricMedian(records, 'echomq', GROUPS_METRIC) };
}

/** Prints the queue table on stdout. */
export function printTable(report: Summary): void {
  console.log(`\n${queueConsoleTable(report)}\n`);
}

/** Prints the EchoMQ-only rows (the Bus, and the lifecycle-log row when measured) on stdout. */
export function printEchoOnly(echoOnly: EchoOnlyResults): void {
  const rows: [string, string][] = BUS_METRICS.map((m) => {
    const a = (echoOnly.busAnchors as Partial<Record<BusMetric, BusAnchorResult>>)[m];
    const anchor = a ? `   raw ${shown(BUS_ANCHORS[m as AnchoredBusMetric], a.value)}   EchoMQ/raw ${pairText(a.ratio)}` : '';
    return [m, `${shown(m, echoOnly.bus[m])}${anchor}`];
  });
  const c1 = echoOnly.busAnchors.bus_group_c1_count1;
  if (c1) rows.splice(3, 0, [`  (c1 against a raw loop reading COUNT 1)`, `raw ${Math.round(c1.value).toLocaleString('en-US')}   EchoMQ/raw ${pairText(c1.ratio)}`]);
  rows.push([EVENTS_LOG_METRIC, echoOnly.eventsLog === undefined ? 'not measured' : shown(EVENTS_LOG_METRIC, echoOnly.eventsLog)]);
  if (echoOnly.groups !== undefined) rows.push([`${GROUPS_METRIC} (BullMQ OSS has no groups)`, shown(GROUPS_METRIC, echoOnly.groups)]);
  const w = Math.max(...rows.map((r) => r[0].length));
  console.log(`EchoMQ only (no BullMQ equivalent):\n${rows.map(([m, v]) => `${m.padEnd(w)}  ${v}`).join('\n')}\n`);
}

/** Prints the cache table (EchoMQ vs bentocache) on stdout. */
export function printCache(cache: Report['cache']): void {
  const rows = CACHE_METRICS.map((m) => {
    const e = cache.results.echomq[m];
    const b = cache.results.bentocache[m];
    return [m, shown(m, e), shown(m, b), `${(e / b).toFixed(2)}×`];
  });
  const head = ['metric', 'echomq', 'bentocache', 'echomq/bentocache'];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  ');
  console.log(`Cache:\n${line(head)}\n${w.map((n) => '-'.repeat(n)).join('  ')}\n${rows.map(line).join('\n')}\n`);
}

/**
 * Writes `bench/results.json` (per system its medians, `ratios` with each per-pair median and
 * min–max, `ceiling`, the EchoMQ-only `bus` rows, `cache` with EchoMQ and bentocache side by
 * side, `flows`) and `docs/benchmarks.md`, or their copies under `bench/out/` unless `write`;
 * returns their paths (relative to the repository root).
 */
export function writeReport(report: Report, write: boolean): string[] {
  const bySystem = Object.fromEntries(SYSTEMS.map((sys) => [sys, {} as Record<string, number>])) as Record<SystemName, Record<string, number>>;
  for (const sys of SYSTEMS) {
    for (const m of METRICS) {
      const v = report.results[sys][m];
      if (v !== undefined) bySystem[sys][m] = rounded(m, v);
    }
  }
  // EchoMQ-only rows: the lifecycle-log queue row beside the other EchoMQ queue rows, the Bus under "bus".
  const { eventsLog, groups, bus } = report.echoOnly;
  if (eventsLog !== undefined) bySystem.echomq[EVENTS_LOG_METRIC] = rounded(EVENTS_LOG_METRIC, eventsLog);
  if (groups !== undefined) bySystem.echomq[GROUPS_METRIC] = rounded(GROUPS_METRIC, groups);
  const r3 = (v: number): number => Math.round(v * 1000) / 1000;
  const ratios = Object.fromEntries(
    Object.entries(report.pairs).map(([m, byAnchor]) => [
      m,
      Object.fromEntries(Object.entries(byAnchor).map(([a, p]) => [a, { median: r3(p.median), min: r3(p.min), max: r3(p.max), pairs: p.pairs }])),
    ]),
  );
  const ceiling = Object.fromEntries(report.ceiling.rows.map((r) => [`x${r.batch}`, { jobs_per_s: Math.round(r.jobsPerS), commands_per_job: r3(r.cost.commandsPerJob), valkey_us_per_job: r3(r.cost.serverUsPerJob) }]));
  const shares = Object.fromEntries(
    Object.entries(report.shares).map(([m, c]) => [
      m,
      { ceiling_per_s: Math.round(c.ceilingPerS), batch: c.batch, ...Object.fromEntries(Object.entries(c.bySystem).map(([sys, p]) => [sys, { median: r3(p.median), min: r3(p.min), max: r3(p.max) }])) },
    ]),
  );
  const busJson: Record<string, unknown> = Object.fromEntries(BUS_METRICS.filter((m) => !Number.isNaN(bus[m])).map((m) => [m, rounded(m, bus[m])]));
  for (const [m, a] of Object.entries(report.echoOnly.busAnchors) as [AnchoredBusMetric | 'bus_group_c1_count1', BusAnchorResult][]) {
    if (m === 'bus_group_c1_count1') {
      busJson[RAW_C1_COUNT1_METRIC] = Math.round(a.value);
      busJson.bus_group_c1_vs_raw_count1 = { median: r3(a.ratio.median), min: r3(a.ratio.min), max: r3(a.ratio.max), pairs: a.ratio.pairs };
      continue;
    }
    busJson[BUS_ANCHORS[m]] = rounded(BUS_ANCHORS[m], a.value);
    busJson[`${m.replace(/_per_s$/, '')}_vs_raw`] = { median: r3(a.ratio.median), min: r3(a.ratio.min), max: r3(a.ratio.max), pairs: a.ratio.pairs };
  }
  const cache = Object.fromEntries(
    (['echomq', 'bentocache'] as const).map((sys) => [sys, Object.fromEntries(CACHE_METRICS.map((m) => [m, rounded(m, report.cache.results[sys][m])]))]),
  );
  const flows = Object.fromEntries(report.flows.rows.map((r) => [`${r.system} ${r.run}`, r.m]));
  // The runs a re-measured pair replaced: phase, system, repetition, values and the other CPU.
  const superseded = report.superseded.map((r) => ({ phase: r.phase, system: r.system, rep: r.rep, values: r.values, other_cores: r.cost?.load?.otherCores }));
  const json = { mode: report.sizes.mode, ...bySystem, ratios, ceiling, ceiling_shares: shares, bus: busJson, cache, flows, superseded };
  const results = reportPath('bench/results.json', write);
  const doc = reportPath('docs/benchmarks.md', write);
  writeFileSync(results.abs, JSON.stringify(json, null, 2) + '\n');
  writeFileSync(doc.abs, renderDoc(report, write));
  return [results.rel, doc.rel];
}
