/**
 * The prose of `docs/benchmarks.md`, filled in from a run's numbers.
 */
import { METRICS, lowerIsBetter, type Metric } from './common.js';
import { busSection } from './bus-doc.js';
import { cacheSection } from './cache-doc.js';
import { flowsSection } from './flows-doc.js';
import { costTable, markdownTable, ratio, shown, type PhaseRecord, type Report } from './format.js';

const SYSTEM_NAMES = ['echomq', 'bullmq'] as const;

const MEANING: Readonly<Record<Metric, string>> = {
  enqueue_single_per_s: 'jobs/s added one call per job with 100 calls in flight (EchoMQ `QueueService.enqueue`, BullMQ `Queue.add`).',
  enqueue_batch_per_s: 'jobs/s added 1,000 per call, one call in flight (EchoMQ `enqueueMany`, BullMQ `addBulk`).',
  process_c1_per_s:
    'jobs/s processed by one consumer of concurrency 1 in the benchmark process. The jobs are enqueued first (untimed); the clock runs from starting the consumer until every handler ran and Valkey shows no job waiting or active.',
  process_c10_per_s: 'the same at concurrency 10.',
  process_c50_per_s: 'the same at concurrency 50.',
  process_c50_prio_per_s:
    'the same with the jobs spread over ten priorities in turn (EchoMQ `priority` 0..9, higher first; BullMQ `priority` 10..1, lower first).',
  process_2x50_per_s:
    'the same with two child processes (`node dist/bench/worker.js`), one consumer of concurrency 50 each, on one queue. The clock starts once both are connected and told to go.',
  latency_p50_ms:
    'median ms from just before the enqueue call to the start of the handler, under a steady ~500 single enqueues/s into a running consumer (concurrency 10, same process, so one clock). The payload carries `performance.timeOrigin + performance.now()`.',
  latency_p99_ms: 'the 99th percentile of the same samples.',
  bytes_per_pending_job:
    'growth of Valkey `used_memory` per job after enqueueing 10,000 jobs with a 100-byte JSON payload and no consumer (the producer is disconnected at both readings, so client buffers do not count).',
};

const fmt = (v: number, d = 1): string => v.toFixed(d);

/** The records of the phases both systems ran (the EchoMQ-only ones go to the Bus section). */
function queueRecords(records: readonly PhaseRecord[]): PhaseRecord[] {
  const both = new Set(records.filter((r) => r.system === 'bullmq').map((r) => r.phase));
  return records.filter((r) => both.has(r.phase));
}

function repetitions(report: Report): string {
  if (report.sizes.reps < 2) return 'One repetition (quick run).';
  const lines = ['| Metric | EchoMQ runs | BullMQ runs |', '|---|---|---|'];
  for (const m of METRICS) {
    const runs = SYSTEM_NAMES.map((sys) =>
      report.records
        .filter((r) => r.system === sys && m in r.values)
        .map((r) => shown(m, r.values[m]))
        .join(' · '),
    );
    lines.push(`| \`${m}\` | ${runs[0]} | ${runs[1]} |`);
  }
  return lines.join('\n');
}

function notes(records: readonly PhaseRecord[]): string {
  return records
    .filter((r) => r.note)
    .map((r) => `- #${r.rep + 1} ${r.phase}, ${r.system}: ${r.note}`)
    .join('\n');
}

/** Metrics where the two systems' repetitions overlap: the lead is within run-to-run noise. */
function overlapping(report: Report): Metric[] {
  if (report.sizes.reps < 2) return [];
  return METRICS.filter((m) => {
    const runs = SYSTEM_NAMES.map((sys) => report.records.filter((r) => r.system === sys && m in r.values).map((r) => r.values[m]));
    if (runs[0].length < 2) return false;
    const lower = lowerIsBetter(m);
    // EchoMQ's worst run against BullMQ's best run.
    return lower ? Math.max(...runs[0]) >= Math.min(...runs[1]) : Math.min(...runs[0]) <= Math.max(...runs[1]);
  });
}

function losses(report: Report): string {
  const row = (m: Metric) => `\`${m}\` (EchoMQ ${shown(m, report.results.echomq[m])}, BullMQ ${shown(m, report.results.bullmq[m])})`;
  const lost = METRICS.filter((m) => !ratio(report.results, m).echoBetter);
  const close = overlapping(report).filter((m) => !lost.includes(m));
  const out = [lost.length === 0 ? 'In this run EchoMQ was ahead on every row (medians).' : `In this run BullMQ was ahead on ${lost.map(row).join(', ')}.`];
  if (close.length > 0) {
    out.push(`EchoMQ's lead is within the run-to-run spread (its worst run was no better than BullMQ's best) on ${close.map(row).join(', ')}.`);
  }
  return out.join(' ');
}

/** Renders `docs/benchmarks.md` for a run. */
export function renderDoc(report: Report): string {
  const { env, sizes: s } = report;
  const n = (v: number): string => v.toLocaleString('en-US');
  const quick = env.quick ? '\n> **Quick run** (`npm run bench -- --quick`): smaller counts, one repetition, noisier numbers. `npm run bench` does the full run.\n' : '';
  const counts = `${n(s.enqueueSingle)} single enqueues, ${n(s.enqueueBatch)} batch-enqueued jobs, ${Object.entries(s.process)
    .map(([k, v]) => `${n(v)} jobs at ${k}`)
    .join(', ')}, ${s.latencySeconds} s of latency load, ${n(s.memoryJobs)} jobs for memory`;
  const reps = s.reps > 1 ? `The suite ran ${s.reps} times; every number below is the median of the ${s.reps} runs (memory, being deterministic, ran once).` : 'The suite ran once.';
  return `# Benchmarks: EchoMQ vs BullMQ (queue) and bentocache (cache)
${quick}
Generated by \`npm run bench${env.quick ? ' -- --quick' : ''}\` (\`bench/run.ts\`) on ${env.date}; the run took ${Math.round(report.seconds)} s.
Both systems ran in the same run against one fresh \`valkey-server\` (started by \`startEmbeddedValkey()\`:
loopback, no persistence), one phase at a time, each phase on a fresh random queue with FLUSHALL between
phases. ${reps} The raw numbers are in \`bench/results.json\`.

- **Machine:** ${env.nproc} CPUs (${env.cpuModel}), ${env.memGiB} GiB RAM, Node ${env.node}, Valkey ${env.valkey};
  load average ${env.loadAvg.toFixed(2)} when the run started. Valkey, the benchmark process and (in the 2×50
  row) two worker processes share these CPUs.
- **Software:** EchoMQ ${env.versions.echomq} (iovalkey ${env.versions.iovalkey}), BullMQ ${env.versions.bullmq} (ioredis ${env.versions.ioredis}), bentocache ${env.versions.bentocache} (ioredis ${env.versions.ioredis}).
- **Counts per run:** ${counts}.

## Results

${markdownTable(report.results)}

The ratio is EchoMQ divided by BullMQ. For the \`_per_s\` rows higher is better; for the latency and
memory rows lower is better (there a ratio below 1× favours EchoMQ).

## What each row means

${METRICS.map((m) => `- \`${m}\`: ${MEANING[m]}`).join('\n')}

## How the two systems are configured

- **Retention:** EchoMQ consumers run with \`keepDone: 1000\` (its default: the newest 1,000 done jobs are
  kept); BullMQ workers run with \`removeOnComplete: { count: 1000 }\` (set on the worker, so it is not
  stored in every job's options). Everything else is each system's default: EchoMQ 3 attempts and a 30 s
  lease; BullMQ 1 attempt, a 30 s lock, stalled-job checks and its events stream.
- **Consumers:** EchoMQ uses its \`Consumer\` loop directly (configured as \`ConsumerOrchestrator\` configures
  it, no Nest); BullMQ uses \`new Worker(name, handler, { connection, concurrency, autorun: false })\` and
  \`worker.run()\` once connected. Handlers are no-ops that count the job.
- **Clients:** EchoMQ's command client is iovalkey without auto-pipelining (its default; the consumer
  sends its complete + claim calls as one explicit pipeline); BullMQ creates its ioredis clients itself
  from \`{ host, port }\`.
- **Prefetch:** EchoMQ's default: a consumer holds up to its concurrency in prefetched (leased, not yet
  started) jobs besides the running ones. BullMQ fetches the next job with each completion.
- **Payload:** 100 bytes of JSON in every throughput and memory phase.
- **Warm-up:** an untimed 2,000-job processing run per system at the start, and 2,000 untimed calls before
  each enqueue phase. The order of the two systems alternates from phase to phase and run to run.

## Where the time goes

Per job, over the timed part of the run whose value is the median: client CPU (\`process.cpuUsage()\`,
plus the child processes' own in the 2×50 row), Valkey CPU (\`INFO cpu\` delta), the time Valkey spent
inside scripts (\`usec\` of EVALSHA/EVAL in \`INFO commandstats\`, wall time, so it can exceed the CPU
when Valkey is descheduled), script calls, and every command Valkey ran including those run by scripts.

${costTable(queueRecords(report.medianRecords))}

Reading it: batching shows up as script calls per job well below 1 (EchoMQ claims up to its free
concurrency and completes everything that finished in one call). Where both systems make about one
script call per job (single enqueues, concurrency 1, latency), the difference is the per-call cost: the
client's CPU per round trip and the number of commands each script runs. When the wall time per job is
close to client CPU + Valkey CPU per job, the two sides take turns (one round trip in flight) instead of
working in parallel on the two CPUs; when it is well above, both wait on the network stack and wake-ups.
In the latency row the wall time is the pacing (one job every ${fmt(1000 / report.sizes.latencyRate, 0)} ms), and the CPU per job includes
the cost of waking up idle processes, which is high on a virtual machine.

${busSection(report)}
${cacheSection(report.cache)}

${flowsSection(report.flows)}
## Every repetition

${repetitions(report)}

## Notes of this run

${notes(report.records)}

## Trade-offs

${losses(report)}

${TRADE_OFFS}
`;
}

const TRADE_OFFS = `- **Where the lead comes from.** Batching and overlap: a busy consumer claims up to its free capacity
  (concurrency + prefetch) in one script call, sends the completions of every handler that finished in
  the same event-loop turn in the same pipeline as the next claim, and keeps up to two such rounds in
  flight. At concurrency 1 the prefetched job starts the moment the previous one ends, so its round trip
  overlaps the next handler instead of sitting between two jobs. Concurrent single enqueues (and
  publishes) to one queue share script calls (group commit: whatever queued while a call was out goes
  in the next one, each request still atomic), so the \`enqueue_single\` row, with 100 enqueues in
  flight, costs a fraction of a script call per job; one enqueue alone is still one script call, as
  in BullMQ.
- **Light-load latency is round trips.** Both systems park an idle consumer on a blocking pop and need a
  second round trip to take the job: enqueue → wake-up → claim is two round trips at best (an idle PING
  round trip is about 0.17 ms on this machine), so the p50 floor is about 0.35 ms here and the rest is
  client and script time. The p99 is set by pauses (GC, scheduling on a shared 2-CPU machine) and moves
  from run to run.
- **Prefetch holds jobs.** An EchoMQ consumer holds up to concurrency + prefetch jobs (default prefetch =
  concurrency). With slow handlers and several processes, one process can hold jobs that an idle process
  could have started; set \`prefetch: 0\` for long jobs. Prefetched jobs are handed back at shutdown.
- **Completion is acknowledged late.** A finished job is marked done with the next batch, not before the
  handler's promise settles; a crash in between re-delivers the job when its lease expires
  (at-least-once, as in BullMQ, with a slightly wider window).
- **The memory row counts waiting jobs only.** EchoMQ keeps a waiting job as one field of the queue's
  data hash plus its id in the pending list, and creates the job's own row at its first claim, so a
  running or retained done job costs more than \`bytes_per_pending_job\` (BullMQ's job hash exists from
  the start, and BullMQ also appends to its events stream).
- **Less bookkeeping, fewer features.** BullMQ writes an events-stream entry per state change, stores job
  options and timestamps with every job, and offers priorities, rate limits, repeatable jobs, progress
  and sandboxed processors. EchoMQ does none of that yet (flows it has: their own table below), which
  is much of its CPU and memory advantage; if you need those features, this is not a like-for-like
  comparison.
- **Two processes on two CPUs.** In the 2×50 row two worker processes and Valkey compete for two CPUs, so
  that row measures contention as much as scaling; with a core per process it would scale further.
`;
