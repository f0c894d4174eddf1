/**
 * The Valkey ceiling: how many jobs per second Valkey alone can claim and complete with
 * EchoMQ's own scripts, with no client work in the way. A wrapper script runs the real
 * `lua/claim.lua` (plain path, `n` jobs) and then the real `lua/complete.lua` on the jobs it
 * claimed (done retention 1,000, as the bench consumers), in one call; `valkey-benchmark` sends
 * that call from 4 connections on a queue prepared with exactly `calls × n` pending jobs, so
 * every call claims and completes `n`. The ceiling is its calls/s × `n`. It slightly flatters
 * Valkey: the ids and tokens go from claim to complete inside the script instead of over the
 * wire, and the payloads are not sent back.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { PROTOCOL_VERSION, queueKeys, scripts } from '@echomq/nestjs/protocol';
import { inBatches, payload100, randomQueue } from './common.js';
import { EchoMqDriver, ECHOMQ_KEEP_DONE } from './echomq.js';
import type { PhaseCost, Probe } from './probe.js';

const run = promisify(execFile);

/** Connections valkey-benchmark sends the wrapper from. */
export const CEILING_CLIENTS = 4;

/**
 * The claim sizes the ceiling is measured at: the jobs per round a consumer claims at c10 (~10),
 * c50 (~50), c200 (~100–150) and in between, so each row has a ceiling at its own size.
 */
export const CEILING_BATCHES = [10, 20, 50, 100, 200, 400] as const;

/** The ceiling at one claim size. */
export interface CeilingRow {
  /** Jobs per claim (and per complete). */
  readonly batch: number;
  /** Jobs claimed and completed per second. */
  readonly jobsPerS: number;
  /** What Valkey spent per job meanwhile (commands, CPU, script time). */
  readonly cost: PhaseCost;
}

/** The ceiling of a run, or why it could not be measured. */
export interface CeilingReport {
  readonly rows: readonly CeilingRow[];
  readonly clients: number;
  readonly jobs: number;
  /** Runs per claim size; each row is the fastest of them. */
  readonly rounds?: number;
  /** Set when valkey-benchmark is missing or failed: the rows are then empty. */
  readonly error?: string;
}

const body = (source: string): string => source.replace(/^#!.*\n/, '');

/** The wrapper script: claim.lua and complete.lua as local functions, then claim n → complete them. */
export function ceilingScript(): string {
  const all = scripts();
  const claim = all.get('claim')?.source;
  const complete = all.get('complete')?.source;
  if (!claim || !complete) throw new Error('ceiling: claim.lua or complete.lua not found');
  return `-- bench ceiling: claim.lua then complete.lua on what it claimed, in one call.
-- KEYS: claim's 9 keys, then done, outbox, outdue. ARGV: n, lease ms, promote limit, done retention.
local function claim(KEYS, ARGV)
${body(claim)}
end
local function complete(KEYS, ARGV)
${body(complete)}
end
local K, A = KEYS, ARGV
local r = claim({ K[1], K[2], K[3], K[4], K[5], K[6], K[7], K[8], K[9] }, { '${PROTOCOL_VERSION}', A[1], A[2], A[3] })
if r.err then return r end
local ck, ca, k = { K[1], K[4], K[10], K[6], K[8], K[9] }, { '${PROTOCOL_VERSION}', A[4], '0' }, 0
for i = 3, #r, r[2] do -- claim: {wait, width, id, token, attempt, payload, extras, flow, ...}
  k = k + 1
  ck[#ck + 1] = K[8] .. r[i]
  ca[#ca + 1] = r[i]
  ca[#ca + 1] = tostring(r[i + 1])
  ca[#ca + 1] = ''
end
if k == 0 then return 0 end
ca[3] = tostring(k)
ck[#ck + 1] = K[11]
ck[#ck + 1] = K[12]
local c = complete(ck, ca)
if c.err then return c end
for i = 1, k do
  if c[i] ~= 1 then return redis.error_reply('ceiling: complete refused a job it claimed') end
end
return k
`;
}

/** The wrapper's key count, keys and arguments for `queue` at claim size `n` (what follows the sha of EVALSHA). */
export function ceilingCallArgs(queue: string, n: number): string[] {
  const k = queueKeys(queue);
  const keys = [k.meta, k.pending, k.scheduled, k.active, k.wake, k.data, k.opts, k.jobPrefix, k.events, k.done, k.outbox, k.outdue];
  return [String(keys.length), ...keys, String(n), '30000', '1000', String(ECHOMQ_KEEP_DONE)];
}

async function valkeyBenchmark(url: string, calls: number, command: string[]): Promise<number> {
  const u = new URL(url);
  const { stdout } = await run('valkey-benchmark', ['-h', u.hostname, '-p', u.port, '-c', String(CEILING_CLIENTS), '-n', String(calls), '--csv', ...command], {
    maxBuffer: 1 << 20,
  });
  // "test","rps",…  then  "EVALSHA …","12345.67",…
  const line = stdout.trim().split('\n').pop() ?? '';
  const rps = Number(/^"[^"]*","([\d.]+)"/.exec(line)?.[1]);
  if (!(rps > 0)) throw new Error(`ceiling: cannot read valkey-benchmark's output: ${stdout.slice(0, 300)}`);
  return rps;
}

/** Measures the ceiling at claim size `n` with `jobs` jobs (rounded down to whole calls). */
async function oneBatch(url: string, probe: Probe, sha: string, n: number, jobs: number): Promise<CeilingRow> {
  const queue = randomQueue(`ceil${n}`);
  const calls = Math.max(10, Math.floor(jobs / n));
  const warmCalls = Math.max(2, Math.ceil(calls / 10));
  const driver = new EchoMqDriver(url);
  const p = await driver.producer(queue);
  try {
    await inBatches(p, (calls + warmCalls) * n, payload100);
  } finally {
    await p.close();
    await driver.close();
  }
  const command = ['EVALSHA', sha, ...ceilingCallArgs(queue, n)];
  // A first call through the probe: a wrong reply fails here, with the error text.
  const first = await probe.call('EVALSHA', sha, ...ceilingCallArgs(queue, n));
  if (first !== n) throw new Error(`ceiling: the wrapper claimed ${String(first)} jobs, not ${n}`);
  await valkeyBenchmark(url, warmCalls - 1, command);
  const m = await probe.start();
  const rps = await valkeyBenchmark(url, calls, command);
  const cost = await m.stop(calls * n);
  const k = queueKeys(queue);
  const left = Number(await probe.call('LLEN', k.pending)) + Number(await probe.call('ZCOUNT', k.active, '-inf', '(+inf'));
  await probe.flush();
  if (left !== 0) throw new Error(`ceiling: ${left} jobs were not claimed and completed (a call failed)`);
  return { batch: n, jobsPerS: rps * n, cost };
}

/**
 * Measures the ceiling at every claim size of `CEILING_BATCHES`, `rounds` times over (all sizes
 * per round), and keeps each size's fastest run: a ceiling is an upper bound, and on a shared
 * machine a run is only ever slowed, so the fastest run is the least disturbed one (a single run
 * taken during a noisy spell put the ceiling below what a consumer then reached). A missing
 * valkey-benchmark is reported, not fatal.
 */
export async function measureCeiling(url: string, probe: Probe, jobs: number, rounds = 3): Promise<CeilingReport> {
  const best = new Map<number, CeilingRow>();
  const rows = (): CeilingRow[] => CEILING_BATCHES.flatMap((n) => best.get(n) ?? []);
  try {
    await probe.flush();
    const sha = await probe.loadScript(ceilingScript());
    for (let r = 1; r <= rounds; r++) {
      for (const n of CEILING_BATCHES) {
        const row = await oneBatch(url, probe, sha, n, jobs);
        console.log(`  ceiling claim+complete ×${String(n).padEnd(4)} ${Math.round(row.jobsPerS).toLocaleString('en-US')} jobs/s (${row.cost.commandsPerJob.toFixed(1)} commands/job; run ${r} of ${rounds})`);
        if (row.jobsPerS > (best.get(n)?.jobsPerS ?? 0)) best.set(n, row);
      }
    }
    return { rows: rows(), clients: CEILING_CLIENTS, jobs, rounds };
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    console.warn(`ceiling not measured: ${error}`);
    return { rows: rows(), clients: CEILING_CLIENTS, jobs, rounds, error };
  }
}

/** The size among `sizes` nearest `target` by ratio (undefined when `sizes` is empty). */
function nearestSize(sizes: readonly number[], target: number): number | undefined {
  let best: number | undefined;
  for (const b of sizes) if (best === undefined || Math.abs(Math.log(b / target)) < Math.abs(Math.log(best / target))) best = b;
  return best;
}

/** The size of `CEILING_BATCHES` nearest `jobsPerCall` (by ratio). */
export function nearestBatch(jobsPerCall: number): number {
  return nearestSize(CEILING_BATCHES, jobsPerCall) ?? CEILING_BATCHES[0];
}

/**
 * The ceiling at claim size `n` measured right beside a phase (bench/run.ts runs it after
 * EchoMQ's run of each ceiling row): the fastest of `runs` runs of `jobs` jobs each, an upper
 * bound as in `measureCeiling`. On a shared machine whose speed drifts over minutes, a row
 * compared with a ceiling measured in the same minute gives a share that a ceiling from the
 * start of the run does not. Undefined (with a warning) when no run succeeds.
 */
export async function pairedCeiling(url: string, probe: Probe, n: number, jobs: number, runs = 2): Promise<CeilingRow | undefined> {
  let best: CeilingRow | undefined;
  for (let i = 0; i < runs; i++) {
    try {
      await probe.flush();
      const sha = await probe.loadScript(ceilingScript());
      const row = await oneBatch(url, probe, sha, n, jobs);
      if (row.jobsPerS > (best?.jobsPerS ?? 0)) best = row;
    } catch (err) {
      console.warn(`paired ceiling not measured: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return best;
}

/** The ceiling row whose claim size is nearest `batch` (undefined when none was measured). */
export function nearestCeiling(report: CeilingReport, batch: number): CeilingRow | undefined {
  const size = nearestSize(report.rows.map((r) => r.batch), batch);
  return report.rows.find((r) => r.batch === size);
}
