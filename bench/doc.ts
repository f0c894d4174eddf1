/**
 * `docs/benchmarks.md`, filled in from a run's numbers: the steady-state headline, the targets,
 * the method, machine and load, the Valkey ceiling, where the time goes, the Bus, Cache and
 * Flows sections, every repetition, and the trade-offs.
 */
import { METRICS, SYSTEMS, SYSTEM_LABEL, lowerIsBetter, type Metric } from './common.js';
import { busSection } from './bus-doc.js';
import { cacheSection } from './cache-doc.js';
import { flowsSection } from './flows-doc.js';
import { clusterSection } from './cluster-doc.js';
import { CONFIGURATION, MEANING, TRADE_OFFS } from './doc-text.js';
import { costTable, shown, type PhaseRecord, type Report } from './format.js';
import { NOISY_OTHER_CORES } from './load.js';
import { measured, queueTable, targetsList } from './queue-doc.js';
import { pairText } from './pairs.js';
import { targets41Section } from './targets41.js';

const n = (v: number): string => v.toLocaleString('en-US');

/** The records of the phases an anchor ran too (the EchoMQ-only ones go to the Bus section). */
function queueRecords(records: readonly PhaseRecord[]): PhaseRecord[] {
  const both = new Set(records.filter((r) => r.system !== 'echomq').map((r) => r.phase));
  return records.filter((r) => both.has(r.phase));
}

function repetitions(report: Report): string {
  if (report.sizes.reps < 2) return 'One repetition (quick run).';
  const lines = ['| Metric | EchoMQ runs | BullMQ runs | bee-queue runs |', '|---|---|---|---|'];
  for (const m of measured(report)) {
    const runs = SYSTEMS.map((sys) =>
      report.records
        .filter((r) => r.system === sys && m in r.values)
        .map((r) => `${shown(m, r.values[m])}${r.cost?.load?.noisy ? ' ⚠' : ''}`)
        .join(' · '),
    );
    lines.push(`| \`${m}\` | ${runs.map((r) => r || '—').join(' | ')} |`);
  }
  return lines.join('\n');
}

function notes(records: readonly PhaseRecord[]): string {
  return records
    .filter((r) => r.note)
    .map((r) => `- #${r.rep + 1} ${r.phase}, ${SYSTEM_LABEL[r.system]}: ${r.note}`)
    .join('\n');
}

/** Where an anchor was ahead (per-pair median), and where the pairs straddle 1× (within the spread). */
function losses(report: Report): string {
  const lost: string[] = [];
  const close: string[] = [];
  for (const m of METRICS) {
    for (const [anchor, p] of Object.entries(report.pairs[m] ?? {})) {
      const label = SYSTEM_LABEL[anchor as keyof typeof SYSTEM_LABEL];
      const better = (r: number): boolean => (lowerIsBetter(m) ? r < 1 : r > 1);
      if (!better(p.median)) lost.push(`\`${m}\` against ${label} (${pairText(p)})`);
      else if (!better(p.min) || !better(p.max)) close.push(`\`${m}\` against ${label} (${pairText(p)})`);
    }
  }
  const out = [lost.length === 0 ? 'In this run EchoMQ was ahead of both anchors on every row they share (per-pair medians).' : `In this run EchoMQ was not ahead on ${lost.join(', ')}.`];
  if (close.length > 0) out.push(`Its lead is within the spread of the pairs (one pair or more went the other way) on ${close.join(', ')}.`);
  return out.join(' ');
}

function noisyPhases(report: Report): string {
  const all = report.records.filter((r) => r.cost?.load?.otherCores !== undefined);
  const noisy = all.filter((r) => r.cost?.load?.noisy);
  if (all.length === 0) return 'The CPU of other processes could not be read (no `/proc`).';
  const worst = Math.max(...all.map((r) => r.cost?.load?.otherCores ?? 0));
  return `${noisy.length} of ${all.length} timed phase runs were noisy (other processes above ${NOISY_OTHER_CORES} cores on average; the most was ${worst.toFixed(2)} cores)${
    noisy.length > 0 ? ': they are marked ⚠ in the tables below, and their numbers are less trustworthy' : ''
  }.${remeasured(report)}`;
}

/** How many pairs were measured again after a noisy run (the replaced runs are in results.json). */
function remeasured(report: Report): string {
  const n = new Set(report.superseded.map((r) => `${r.phase}#${r.rep}`)).size;
  const runs = report.superseded.length;
  return runs === 0 ? ' No pair needed measuring again.' : ` ${n} pairs with a noisy run were measured again (${runs} runs replaced: under \`superseded\` in bench/results.json).`;
}

function ceilingSection(report: Report): string {
  const c = report.ceiling;
  if (c.rows.length === 0) return `Not measured in this run${c.error ? ` (${c.error})` : ''}.`;
  const lines = ['| Claim size | Jobs/s | Valkey commands/job | Valkey CPU µs/job | in scripts µs/job | Valkey busy | Other CPU (cores) |', '|---:|---:|---:|---:|---:|---:|---:|'];
  for (const r of c.rows) {
    const busy = r.cost.valkeyBusy === undefined ? '—' : `${Math.round(r.cost.valkeyBusy * 100)}%`;
    const other = r.cost.load?.otherCores === undefined ? '—' : `${r.cost.load.otherCores.toFixed(2)}${r.cost.load.noisy ? ' ⚠' : ''}`;
    lines.push(`| ${r.batch} | ${n(Math.round(r.jobsPerS))} | ${r.cost.commandsPerJob.toFixed(1)} | ${r.cost.serverUsPerJob.toFixed(1)} | ${r.cost.scriptUsPerJob.toFixed(1)} | ${busy} | ${other} |`);
  }
  return `How fast Valkey alone can claim and complete jobs with EchoMQ's own scripts: a wrapper script
(\`bench/ceiling.ts\`) runs the real \`lua/claim.lua\` for a claim of the given size, then the real
\`lua/complete.lua\` on the jobs it claimed (done retention 1,000), in one call; \`valkey-benchmark\` sends it
from ${c.clients} connections on a queue holding exactly enough pending jobs (about ${n(c.jobs)} per size, after an
untimed tenth), so every call claims and completes a full batch; each size runs ${c.rounds ?? 1} time(s) and its
fastest run is kept (a ceiling is an upper bound; a shared machine only ever slows a run). Compare the commands per job with
EchoMQ's in the cost table below: the same script mix, without any client in the way.

${lines.join('\n')}

The "Share of the Valkey ceiling" column of the headline compares each system's rate on a row with a
ceiling **measured beside it**: right after EchoMQ's run of the row in each repetition, two more ceiling
runs (a quarter of the jobs above each, the faster kept) at the claim size nearest EchoMQ's own on that row, and each share is
the median of the per-repetition shares with their min–max (each system's value in that repetition over
that repetition's ceiling). This machine's speed drifts by a third over minutes, so a row compared with
the table above (measured once, at the start, best of three) read as low as 54% of it (2026-12-02), while
the same consumer measured beside the ceiling on the same Valkey reached 85–93% of it. The claim size is 1 ÷ script calls per job, since the consumer
claims and completes in one \`round.lua\` call per round, as the wrapper does in one call (counted on a c50
run: ~48 jobs claimed and ~51 completed per round call; an earlier version of this table divided 2 by
the calls per job, from when claim and complete were two calls, and so compared c50 with the ceiling at
twice its claim size). For BullMQ and bee-queue the share is of EchoMQ's script mix, a
reference point for "how close to what this Valkey can do", not of their own scripts.`;
}

/** Renders `docs/benchmarks.md` for a run; `write`: it refreshes the committed report (`--write`). */
export function renderDoc(report: Report, write = true): string {
  const { env, sizes: s } = report;
  const flags = [...(env.quick ? ['--quick'] : []), ...(write ? ['--write'] : [])];
  const quick = env.quick
    ? '\n> **Quick run** (`npm run bench -- --quick`): small counts, one repetition, a warm-up as long as the timed part: a smoke test, not a measurement. `npm run bench` does the steady run (estimated 15–20 minutes on a quiet 2-CPU machine; `-- --backlog-1m` adds about 5).\n'
    : '';
  const warm = `${s.warmup}×`;
  const counts = `${n(s.enqueueSingle)} single enqueues, ${n(s.enqueueBatch)} batch-enqueued jobs, ${n(s.process)} jobs per processing row (each after ${n(Math.ceil(s.process * s.warmup))} untimed), backlogs of ${s.backlogs.map(n).join(' / ')} pending, ${s.latencySeconds} s of latency load at ${s.latencyRate}/s and ${s.latency5kSeconds} s at ${n(s.latency5kRate)}/s, ${n(s.memoryJobs)} jobs for memory, ${n(s.ceilingJobs)} jobs per ceiling run`;
  const reps = s.reps > 1 ? `${s.reps} repetitions of the whole suite` : 'one repetition';
  return `# Benchmarks: EchoMQ vs BullMQ and bee-queue (queue), bentocache (cache)
${quick}
Generated by \`npm run bench${flags.length > 0 ? ` -- ${flags.join(' ')}` : ''}\` (\`bench/run.ts\`, ${s.mode} mode) on ${env.date}; the run took ${Math.round(report.seconds)} s.
The raw numbers are in \`bench/results.json\`.

## Headline${env.quick ? ' (quick run: short, one repetition, not steady state)' : ': steady state'}

${queueTable(report, report.ceiling)}

Each value is the median over ${reps}. **Every ratio is the median of the per-pair ratios** (EchoMQ and
the anchor measured in the same repetition, one right after the other) **with their min–max** in
brackets. For the \`_per_s\` rows higher is better; for the latency and memory rows lower is better (a
ratio below 1× favours EchoMQ). "Phases" counts the timed runs of the row (all systems) during which
other processes used the CPU (⚠ noisy, see "Machine and load").

## Targets (issue 13)

${targetsList(report, report.ceiling)}

The cache targets are in the Cache section below.

${targets41Section(report)}
## Method

- **One Valkey:** a fresh \`valkey-server\` (started by \`startEmbeddedValkey()\`: loopback, no persistence)
  for the whole run; each phase on a fresh random queue, FLUSHALL between phases.
- **Steady state:** every timed phase follows a warm-up of ${warm} as many jobs as it times, on the same
  queue and the same running consumer or producer: the processing rows enqueue warm-up + timed jobs,
  start the consumer, and start the clock only once it has run the warm-up jobs (the 2×50 row once the
  two child workers together have), so no start-up, JIT or connection warm-up is timed. The enqueue
  rows make their warm-up calls on the same producer first; the latency row sends its warm-up jobs at
  the same pace. At the start of the run, every system also processes ${n(s.startWarmup)} untimed jobs.
- **Repetitions:** ${reps}, each running every phase for each system, one system at a time; the order of
  the systems alternates from phase to phase and from repetition to repetition (EchoMQ first, then last),
  so neither side always runs on a warmer or quieter machine.
- **Cost per job:** commands from \`INFO commandstats\` (reset per phase, including the commands scripts
  run), Valkey CPU from \`INFO cpu\`, client CPU from \`process.cpuUsage()\` plus the child workers' own.
- **Load:** per phase, the machine's busy CPU (\`/proc/stat\`) minus this process tree and the Valkey
  server (\`/proc/<pid>/stat\`) is the CPU of other processes; above ${NOISY_OTHER_CORES} cores on average the phase is
  flagged noisy, and the whole pair (every system of that phase and repetition, same order) is measured
  again, at most twice more; the last attempt counts, noisy or not. The 1-minute load average at the end
  of each phase is in the cost table.
- **Counts per run:** ${counts}.

## Machine and load

- ${env.nproc} CPUs (${env.cpuModel}), ${env.memGiB} GiB RAM, Node ${env.node}, Valkey ${env.valkey}. Valkey, the
  benchmark process and (in the 2×50 row) two worker processes share these CPUs.
- EchoMQ ${env.versions.echomq} (iovalkey ${env.versions.iovalkey}), BullMQ ${env.versions.bullmq} (ioredis ${env.versions.ioredis}), bee-queue ${env.versions.beequeue} (redis v3), bentocache ${env.versions.bentocache} (ioredis ${env.versions.ioredis}).
- Load average ${env.loadAvg.toFixed(2)} when the run started${env.loadAvgEnd === undefined ? '' : `, ${env.loadAvgEnd.toFixed(2)} when the queue phases ended`}. ${noisyPhases(report)}

## The Valkey ceiling

${ceilingSection(report)}

## What each row means

${measured(report)
  .map((m: Metric) => `- \`${m}\`: ${MEANING[m]}`)
  .join('\n')}

## How the three systems are configured

${CONFIGURATION}

## Where the time goes

Per job, over the timed part of the repetition whose value is the median: wall time, client CPU, Valkey
CPU, the time Valkey spent inside scripts (\`usec\` of EVALSHA/EVAL in \`INFO commandstats\`, wall time, so it
can exceed the CPU when Valkey is descheduled), script calls, every command Valkey ran including those run
by scripts, Valkey's CPU over the wall time, the cores busy on the whole machine and those of other
processes (⚠ noisy), and the load average at the end of the phase.

${costTable(queueRecords(report.medianRecords))}

Reading it: batching shows up as script calls per job well below 1. Where a system makes about one
script call per job (single enqueues, concurrency 1, latency) the difference is the per-call cost: the
client's CPU per round trip and the commands each script runs. When Valkey busy is well below 100% while
the client's CPU per job is below the wall time per job, the two sides wait on each other (round trips)
rather than on the CPU. In the latency row the wall time is the pacing, and the CPU per job includes the
cost of waking up idle processes, which is high on a virtual machine.

${busSection(report)}
${cacheSection(report.cache)}

${flowsSection(report.flows)}
${clusterSection(report.cluster)}
## Every repetition

${repetitions(report)}

## Notes of this run

${notes(report.records)}

## Trade-offs

${losses(report)}

${TRADE_OFFS}
`;
}
