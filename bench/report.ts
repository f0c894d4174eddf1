/**
 * Output of the benchmark: the environment it ran in, the console table, `bench/results.json`,
 * and `docs/benchmarks.md` (its prose lives in `bench/doc.ts`).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { BUS_METRICS, EVENTS_LOG_METRIC, GROUPS_METRIC } from './bus.js';
import { CACHE_METRICS } from './cache.js';
import { METRICS, type SystemName } from './common.js';
import { renderDoc } from './doc.js';
import { ratio, rounded, shown, type Environment, type Report } from './format.js';
import type { Probe } from './probe.js';

const root = (rel: string): string => fileURLToPath(new URL(`../../${rel}`, import.meta.url));

const version = (pkg: string): string => {
  const path = pkg === '.' ? root('package.json') : root(`node_modules/${pkg}/package.json`);
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
    versions: { echomq: version('.'), bullmq: version('bullmq'), ioredis: version('ioredis'), iovalkey: version('iovalkey'), bentocache: version('bentocache') },
  };
}

/** Prints the results table on stdout. */
export function printTable(results: Report['results']): void {
  const rows = METRICS.map((m) => [m, shown(m, results.echomq[m]), shown(m, results.bullmq[m]), ratio(results, m).text]);
  const head = ['metric', 'echomq', 'bullmq', 'echomq/bullmq'];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  ');
  console.log(`\n${line(head)}\n${w.map((n) => '-'.repeat(n)).join('  ')}\n${rows.map(line).join('\n')}\n`);
}

/** Prints the EchoMQ-only rows (the Bus, and the lifecycle-log row when measured) on stdout. */
export function printEchoOnly(echoOnly: Report['echoOnly']): void {
  const rows: [string, string][] = BUS_METRICS.map((m) => [m, shown(m, echoOnly.bus[m])]);
  rows.push([EVENTS_LOG_METRIC, echoOnly.eventsLog === undefined ? 'not measured (no eventsLog option)' : shown(EVENTS_LOG_METRIC, echoOnly.eventsLog)]);
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
 * Writes `bench/results.json` (`echomq`, `bullmq`, the EchoMQ-only `bus` rows, and `cache` with
 * EchoMQ and bentocache side by side) and
 * `docs/benchmarks.md`; returns their paths (relative). */
export function writeReport(report: Report): string[] {
  const json: Record<SystemName | 'bus', Record<string, number>> & { cache: Record<'echomq' | 'bentocache', Record<string, number>> } = {
    echomq: {},
    bullmq: {},
    bus: {},
    cache: { echomq: {}, bentocache: {} },
  };
  for (const system of ['echomq', 'bullmq'] as const) {
    for (const m of METRICS) json[system][m] = rounded(m, report.results[system][m]);
  }
  // EchoMQ-only rows: the lifecycle-log queue row beside the other EchoMQ queue rows, the Bus under "bus".
  const { eventsLog, bus } = report.echoOnly;
  if (eventsLog !== undefined) json.echomq[EVENTS_LOG_METRIC] = rounded(EVENTS_LOG_METRIC, eventsLog);
  for (const m of BUS_METRICS) json.bus[m] = rounded(m, bus[m]);
  for (const system of ['echomq', 'bentocache'] as const) {
    for (const m of CACHE_METRICS) json.cache[system][m] = rounded(m, report.cache.results[system][m]);
  }
  const flows = Object.fromEntries(report.flows.rows.map((r) => [`${r.system} ${r.run}`, r.m]));
  writeFileSync(root('bench/results.json'), JSON.stringify({ ...json, flows }, null, 2) + '\n');
  writeFileSync(root('docs/benchmarks.md'), renderDoc(report));
  return ['bench/results.json', 'docs/benchmarks.md'];
}
