/**
 * The "Bus" section of `docs/benchmarks.md`: the EchoMQ-only rows (the Bus, and the queue's
 * lifecycle log when this build has it), what each means, their cost and every repetition.
 */
import { BUS_ANCHORS, BUS_METRICS, BUS_READ_AHEAD, EVENTS_LOG_ENTRIES, EVENTS_LOG_METRIC, type AnchoredBusMetric, type BusMetric } from './bus.js';
import { RAW_C1_COUNT1_METRIC, RAW_READ_COUNT } from './bus-raw.js';
import { costTable, shown, type AnyMetric, type BusAnchorResult, type PhaseRecord, type Report } from './format.js';
import { pairText } from './pairs.js';

const BUS_MEANING: Readonly<Record<BusMetric, string>> = {
  bus_publish_single_per_s: 'events/s published one `BusService.publish` call per event with 100 calls in flight (one `publish.lua` call each).',
  bus_publish_batch_per_s: 'events/s published 1,000 per `BusService.publishMany` call, one call in flight.',
  bus_group_c1_per_s:
    'events/s handled by one `GroupConsumer` of concurrency 1 (no Nest) with a no-op handler. The warm-up and timed events are published first (untimed); `start()` creates the group at the start of the log, and the clock runs from the moment the member handled the warm-up events until every handler ran and the group\'s `XPENDING` summary is 0, i.e. every entry is acknowledged.',
  bus_group_c1_prefetch50_per_s: `the c1 row with the opt-in read-ahead \`prefetch: ${BUS_READ_AHEAD}\` (docs/bus.md "Read-ahead"): one \`XREADGROUP\` fetches up to ${1 + BUS_READ_AHEAD} entries and their acks are batched, so it reads as its raw \`COUNT ${RAW_READ_COUNT}\` anchor does; more events than the c1 row (the counts above), as it runs several times faster.`,
  bus_group_c50_per_s: 'the same at concurrency 50.',
  bus_latency_p50_ms:
    'median ms from just before the `publish` call to the start of the group handler, under a steady ~500 single publishes/s into a running group member (concurrency 10, same process, so one clock). The payload carries the monotonic clock (`process.hrtime`) in ms.',
  bus_latency_p99_ms: 'the 99th percentile of the same samples.',
};

/** What each raw anchor runs (`bus-raw.ts`). */
const ANCHOR_MEANING: Readonly<Record<AnchoredBusMetric, string>> = {
  bus_publish_single_per_s: '`XADD <log> * p <json>` per event, 100 in flight on one connection',
  bus_publish_batch_per_s: 'pipelines of 1,000 `XADD`s, one pipeline in flight',
  bus_group_c1_per_s: `\`XREADGROUP … COUNT ${RAW_READ_COUNT} BLOCK\`, the handlers one after another, one \`XACK\` of the batch`,
  bus_group_c1_prefetch50_per_s: `the same loop as \`${BUS_ANCHORS.bus_group_c1_per_s}\` (\`COUNT ${RAW_READ_COUNT}\`, the handlers one after another, one \`XACK\` per batch), measured again beside the read-ahead row over as many events`,
  bus_group_c50_per_s: `\`XREADGROUP … COUNT ${RAW_READ_COUNT} BLOCK\`, the batch's 50 handlers at once, one \`XACK\` of the batch`,
};

/** The medians of the EchoMQ-only rows as a Markdown table, each throughput row beside its raw anchor. */
function busTable(report: Report): string {
  const anchors = report.echoOnly.busAnchors as Partial<Record<BusMetric, BusAnchorResult>>;
  const lines = ['| Metric | EchoMQ | Raw anchor | EchoMQ / raw | Better |', '|---|---:|---:|---:|---|'];
  for (const m of BUS_METRICS) {
    const a = anchors[m];
    const raw = a ? shown(BUS_ANCHORS[m as AnchoredBusMetric], a.value) : '—';
    lines.push(`| \`${m}\` | ${shown(m, report.echoOnly.bus[m])} | ${raw} | ${a ? pairText(a.ratio) : '—'} | ${m.includes('latency') ? 'lower' : 'higher'} |`);
  }
  const c1 = report.echoOnly.busAnchors.bus_group_c1_count1;
  if (c1) {
    lines.push(
      `| ↳ c1 against a raw loop reading \`COUNT 1\` (\`${RAW_C1_COUNT1_METRIC}\`, one round trip per event, as \`GroupConsumer\` at concurrency 1 reads its one free slot) | | ${Math.round(c1.value).toLocaleString('en-US')} | ${pairText(c1.ratio)} | higher |`,
    );
  }
  return lines.join('\n');
}

/** Every repetition of the EchoMQ-only rows (full runs only). */
function busRepetitions(report: Report): string {
  if (report.sizes.reps < 2) return 'One repetition (quick run).';
  const rows: string[] = [...BUS_METRICS, ...Object.values(BUS_ANCHORS), RAW_C1_COUNT1_METRIC];
  if (report.echoOnly.eventsLog !== undefined) rows.push(EVENTS_LOG_METRIC);
  const lines = ['| Metric | EchoMQ runs |', '|---|---|'];
  for (const m of rows) {
    const runs = report.records.filter((r) => r.system === 'echomq' && m in r.values).map((r) => shown(m as AnyMetric, r.values[m]));
    lines.push(`| \`${m}\` | ${runs.join(' · ')} |`);
  }
  return lines.join('\n');
}

/** The lifecycle-log comparison: plain c50 against c50 with `eventsLog` on, or why it is missing. */
function eventsLogPart(report: Report): string {
  const withLog = report.echoOnly.eventsLog;
  if (withLog === undefined) {
    return `Not measured in this run: this build's \`QueueDefaults\` has no \`eventsLog\` option, so
\`${EVENTS_LOG_METRIC}\` is absent from \`bench/results.json\`.`;
  }
  const plain = report.results.echomq.process_c50_per_s ?? Number.NaN;
  return `| Metric | EchoMQ | vs \`process_c50_per_s\` |
|---|---:|---:|
| \`process_c50_per_s\` (signals only, \`eventsLog: 0\`) | ${shown('process_c50_per_s', plain)} | 1.00× |
| \`${EVENTS_LOG_METRIC}\` (\`eventsLog: ${EVENTS_LOG_ENTRIES.toLocaleString('en-US')}\`) | ${shown(EVENTS_LOG_METRIC, withLog)} | ${(withLog / plain).toFixed(2)}× |

\`${EVENTS_LOG_METRIC}\`: the \`process_c50_per_s\` phase (same job count, one in-process consumer of
concurrency 50, \`keepDone: 1000\`) with \`eventsLog: ${EVENTS_LOG_ENTRIES}\` on the queue defaults of the producer
and the consumer (\`new QueueService(conn, resolveDefaults(BUILTIN_DEFAULTS, { eventsLog: ${EVENTS_LOG_ENTRIES} }))\`), so
every transition is also appended to the queue's bounded lifecycle stream (as this build writes it: one
stream entry per script call and kind of transition, listing that call's job ids). Both rows come from the same
run and Valkey; the ratio is the cost of the lifecycle log (below 1× = slower). It is written under
\`"echomq"\` in \`bench/results.json\`, beside \`process_c50_per_s\`. For reference, BullMQ appends to its
events stream by default, so its \`process_c50_per_s\` in the queue table already includes that kind of cost.`;
}

/** Renders the "Bus" section (with its lifecycle-log part) of `docs/benchmarks.md`. */
export function busSection(report: Report): string {
  const b = report.sizes.bus;
  const n = (v: number): string => v.toLocaleString('en-US');
  const echoOnly = echoOnlyRecords(report.medianRecords).flatMap((r) =>
    r.anchorCost ? [r, { ...r, phase: `${r.phase} (raw anchor)`, cost: r.anchorCost, systemLabel: 'raw commands' }] : [r],
  );
  return `## Bus (EchoMQ only)

These rows have no BullMQ column: BullMQ has no retained, replayable event log read by consumer
groups (its \`QueueEvents\` stream reports job transitions, it is not an application bus), so there is
nothing like-for-like to run. Their anchor is the ceiling of the same work done by hand: each
throughput row is measured beside a hand-written client over the same stream (\`emq:{t}:bus:log\`,
one field \`p\` holding the JSON text, the same payloads and group), in the same phase, the order of
the two alternating with the repetition; the ratio is EchoMQ / raw, the median of the per-repetition
ratios [min–max]. What the raw side runs:

${(Object.keys(ANCHOR_MEANING) as AnchoredBusMetric[]).map((m) => `- \`${BUS_ANCHORS[m]}\` (beside \`${m}\`): ${ANCHOR_MEANING[m]}.`).join('\n')}

The raw group loop has the same delivery semantics as \`GroupConsumer\` (at least once: the batch
is acknowledged after its handlers ran, one \`XACK\` per batch; the handler gets the parsed
payload) and none of its upkeep (no reclaim of stale entries, no delivery counts, no dead letters,
no watchdog on the blocking read). The rows were measured on the same Valkey in the same run as the queue
rows, each the median over the same repetitions, and are written under \`"bus"\` in
\`bench/results.json\`. Counts per run: ${n(b.publishSingle)} single publishes, ${n(b.publishBatch)} batch-published events,
${n(b.group.c1)} events at group c1, ${n(b.group.c1ra)} at group c1 with read-ahead, ${n(b.group.c50)} at group c50, ${b.latencySeconds} s of latency load at ~${b.latencyRate}/s. Payload: the
same 100 bytes of JSON as the queue phases (the latency phase carries the timestamp instead).

${busTable(report)}

- **Configuration:** \`BusService\` with its defaults (automatic trim of published topics every 5 s; no
  retention policy is set, so a trim cuts nothing). \`GroupConsumer\` with its defaults except the
  concurrency: \`maxDeliveries\` 5, \`ackTimeoutMs\` 30,000, \`XREADGROUP … BLOCK 5000\` on its own
  connection, acknowledgements of one tick batched in one \`XACK\`. Group \`bench\`, \`from: 'start'\`.
  Warm-up: an untimed ${n(report.sizes.startWarmup)}-event group run (concurrency 10) at the start, and, as in the
  queue phases, ${report.sizes.warmup}× the timed count of untimed calls (or events handled by the running group
  member, before the clock starts) before each timed phase.

${BUS_METRICS.map((m) => `- \`${m}\`: ${BUS_MEANING[m]}`).join('\n')}

### Queue lifecycle log (\`eventsLog\`)

${eventsLogPart(report)}

### Where the time goes (EchoMQ-only phases)

Per event (per job for the lifecycle-log phase), measured as for the queue phases above. A group
consumer runs no script: it reads with \`XREADGROUP\` and acknowledges with \`XACK\`, so its script
columns are 0 and its cost shows in the command count.

${costTable(echoOnly, 'event')}

### Every repetition (EchoMQ-only rows)

${busRepetitions(report)}
`;
}

/** The EchoMQ-only phase records of `records` (those BullMQ did not run). */
export function echoOnlyRecords(records: readonly PhaseRecord[]): PhaseRecord[] {
  return records.filter((r) => r.system === 'echomq' && !records.some((x) => x.phase === r.phase && x.system === 'bullmq'));
}
