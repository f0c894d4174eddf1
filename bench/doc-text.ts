/**
 * The fixed prose of `docs/benchmarks.md`'s queue part: what each row means, how the three
 * systems are configured, and the trade-offs that hold whatever the numbers.
 */
import type { Metric } from './common.js';

/** What each queue row measures. */
export const MEANING: Readonly<Record<Metric, string>> = {
  enqueue_single_per_s:
    'jobs/s added one call per job with 100 calls in flight from one process (EchoMQ `QueueService.enqueue`, BullMQ `Queue.add`, bee-queue `createJob().save()`).',
  enqueue_batch_per_s: 'jobs/s added 1,000 per call, one call in flight (EchoMQ `enqueueMany`, BullMQ `addBulk`, bee-queue `saveAll`).',
  process_c1_per_s:
    'jobs/s processed by one consumer of concurrency 1 in the benchmark process. The warm-up and the timed jobs are enqueued first (untimed); the clock starts once the running consumer has processed the warm-up jobs and stops when every handler ran and Valkey shows no job waiting or active.',
  process_c1_prefetch0_per_s:
    'the same with EchoMQ\'s `prefetch: 0` (the consumer holds only the job it runs, as BullMQ and bee-queue do). BullMQ has no prefetch: its figure is its c1 configuration run again in this phase; bee-queue is compared on `process_c1_per_s`.',
  process_c10_per_s: 'the same at concurrency 10.',
  process_c50_per_s: 'the same at concurrency 50.',
  process_c200_per_s: 'the same at concurrency 200.',
  process_c50_prio_per_s:
    'concurrency 50 with the jobs spread over ten priorities in turn (EchoMQ `priority` 0..9, higher first; BullMQ `priority` 10..1, lower first). bee-queue has no priorities.',
  process_2x50_per_s:
    'two child processes (`node bench/dist/worker.js`), one consumer of concurrency 50 each, on one queue. The clock starts once the two together processed the warm-up jobs; their CPU counts as client CPU.',
  process_c50_backlog_10k_per_s:
    'concurrency 50 with 10,000 more jobs pending behind the timed ones (the queue holds 10k–30k pending jobs while the clock runs; it stops when the timed jobs ran). The backlog is enqueued in batches of 1,000.',
  process_c50_backlog_100k_per_s: 'the same with 100,000 jobs pending behind.',
  process_c50_backlog_1m_per_s: 'the same with 1,000,000 jobs pending behind (opt-in: `--backlog-1m`; enqueueing them takes about a minute for BullMQ).',
  latency_p50_ms:
    'median ms from just before the enqueue call to the start of the handler, under a steady ~500 single enqueues/s into a running consumer (concurrency 10, same process, so one clock). The payload carries the monotonic clock (`process.hrtime`) in ms; the warm-up jobs at the same rate are not recorded.',
  latency_p99_ms: 'the 99th percentile of the same samples.',
  latency_5k_p50_ms:
    'median ms from just before the enqueue call to the start of the handler as in `latency_p50_ms`, under a steady ~5,000 single enqueues/s into the same kind of consumer (concurrency 10, same process): the pacing loop sends the enqueues due at each ~1 ms timer tick, about 5 at a time; the warm-up jobs at the same rate are not recorded.',
  latency_5k_p99_ms: 'the 99th percentile of the same samples.',
  fanout_completed_x4_per_s:
    'lifecycle fan-out: jobs/s processed by one consumer of concurrency 50 while 4 listeners (each on its own connection, opened before the jobs) each hear every job\'s `completed` event; the clock starts once the consumer ran the warm-up jobs and stops when the slowest listener heard the last job. EchoMQ: `eventsLog: 10000` on the queue and 4 `EventLogReader`s in 4 consumer groups (what `@OnQueueEvent(q, \'completed\', { scope: \'fleet\' })` runs); BullMQ: 4 `QueueEvents` counting `completed`. bee-queue is not run.',
  bytes_per_pending_job:
    'growth of Valkey `used_memory` per job after enqueueing the memory phase\'s jobs with a 100-byte JSON payload and no consumer (the producer is disconnected at both readings, so client buffers do not count).',
};

/** How the three systems are configured. */
export const CONFIGURATION = `- **Retention:** EchoMQ consumers run with \`keepDone: 1000\` (its default: the newest 1,000 done jobs are
  kept); BullMQ workers run with \`removeOnComplete: { count: 1000 }\` (set on the worker, so it is not
  stored in every job's options); bee-queue has no "keep the newest N", so its worker runs with
  \`removeOnSuccess: true\` (a succeeded job is deleted at once, which is cheaper than keeping 1,000).
  Everything else is each system's default: EchoMQ 3 attempts and a 30 s lease; BullMQ 1 attempt, a 30 s
  lock, stalled-job checks and its events stream; bee-queue 1 attempt, a 5 s stall interval and its job
  events published on pub/sub (\`sendEvents\`).
- **Consumers:** EchoMQ uses its \`Consumer\` loop directly (configured as \`ConsumerOrchestrator\` configures
  it, no Nest); BullMQ uses \`new Worker(name, handler, { connection, concurrency, autorun: false })\` and
  \`worker.run()\` once connected; bee-queue uses \`new Queue(name, { redis, removeOnSuccess: true,
  getEvents: false })\` and \`queue.process(concurrency, handler)\`. Handlers are no-ops that count the job.
- **Clients:** EchoMQ's command client is iovalkey without auto-pipelining (its default; the consumer
  sends its complete + claim calls as one explicit pipeline); BullMQ creates its ioredis clients itself
  from \`{ host, port }\`; bee-queue its \`redis\` v3 clients from \`{ host, port }\`. bee-queue producers are
  \`{ isWorker: false, getEvents: false, storeJobs: false }\` (its documented producer settings: without
  them every saved job stays in a map of the producer until an event about it arrives).
- **Prefetch:** EchoMQ's default: a consumer holds up to its concurrency in prefetched (leased, not yet
  started) jobs besides the running ones, so "concurrency 1" runs one handler at a time but holds up to
  two jobs; \`process_c1_prefetch0_per_s\` is the like-for-like c1 row. BullMQ fetches the next job with
  each completion; bee-queue pops one job per free slot.
- **Payload:** 100 bytes of JSON in every throughput and memory phase.`;

/** The trade-offs that hold whatever the numbers of a run. */
export const TRADE_OFFS = `- **Where the lead comes from.** Batching and overlap: a busy consumer claims up to its free capacity
  (concurrency + prefetch) in one script call, sends the completions of every handler that finished in
  the same event-loop turn in the same pipeline as the next claim, and keeps more than one such round in
  flight. At concurrency 1 the prefetched job starts the moment the previous one ends, so its round trip
  overlaps the next handler instead of sitting between two jobs (\`process_c1_prefetch0_per_s\` shows
  what is left without it). Concurrent single enqueues (and publishes) to one queue share script calls,
  so the \`enqueue_single\` row, with 100 enqueues in flight, costs a fraction of a script call per job
  (up to four calls out per queue, each sent once 25 jobs wait, so Valkey runs one while the client
  builds the next); one enqueue alone is still one script call, as in BullMQ and bee-queue. Plain jobs
  travel in \`enqueue.lua\`'s compact form, two arguments per job instead of six.
- **bee-queue is lean per job.** It runs fewer commands per enqueue, deletes a succeeded job at once
  (\`removeOnSuccess\`), and has no per-claim lease or fencing token (stalled jobs are found by a
  periodic sweep of its active list); where EchoMQ is not ahead of it, that is the price of EchoMQ's
  bookkeeping (fencing tokens, bounded retention, lifecycle signals). It has no priorities, groups,
  flows or prefetch, hence the empty cells.
- **The ceiling flatters Valkey a little.** The wrapper passes the claimed ids and tokens from claim.lua
  to complete.lua inside one script, so Valkey parses no arguments and sends no payloads back for them;
  a real consumer pays both. A share near 100% means Valkey is the limit; well below it, the client
  (its CPU, or round trips waiting on each other) is.
- **Light-load latency is round trips.** An idle consumer parks on a blocking pop and registers as
  parked: an enqueue onto an empty queue leases the job to it in its own script call, so enqueue →
  handler start costs the enqueue's round trip and the wake-up, with no claim call (docs/queue.md,
  the consumer loop's "Idle" step). A job that arrives while the consumer is busy waits in
  \`pending\` for the claim the consumer's next wait sends first: no wake-up, but a round trip after the
  consumer is free. The p99 is set by pauses (GC, scheduling on a shared 2-CPU machine) and moves from run
  to run. \`npm run bench:bounds -- --write\` writes docs/bounds.md: the bare round trip, what each script call on
  this path costs Valkey after an idle gap (several times its busy cost), and the c1 \`prefetch: 0\` and
  latency rows taken apart against that floor.
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
- **Less bookkeeping, fewer features than BullMQ.** BullMQ writes an events-stream entry per state
  change, stores job options and timestamps with every job, and offers repeatable jobs, progress and
  sandboxed processors. If you need its features, this is not a like-for-like comparison.
- **Two processes on two CPUs.** In the 2×50 row two worker processes and Valkey compete for two CPUs, so
  that row measures contention as much as scaling; with a core per process it would scale further.`;
