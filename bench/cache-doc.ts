/**
 * The "Cache" section of `docs/benchmarks.md`: EchoMQ's `CacheService` against bentocache on the
 * same Valkey, with the ratios, the targets, what each row means, the configuration, the
 * trade-offs and every repetition.
 */
import { CACHE_IN_FLIGHT, CACHE_METRICS, CACHE_SYSTEMS, CACHE_TTL_MS, L1_MAX_ITEMS, cacheLowerIsBetter, type CacheMetric } from './cache.js';
import type { CacheReport } from './cache-phases.js';
import { shown } from './format.js';

const MEANING: Readonly<Record<CacheMetric, string>> = {
  cache_l1_hit_per_s: `gets/s of one hot key already in the instance's L1 (set, then read once, then 10,000 untimed gets), in sequential batches of ${CACHE_IN_FLIGHT} concurrent calls. No Valkey traffic: this is the in-process read path (lookup, freshness check, JSON decode).`,
  cache_l2_hit_per_s: `gets/s of distinct keys written beforehand by a second instance of the same system (untimed), read once each by an instance whose L1 has never seen them, ${CACHE_IN_FLIGHT} in flight: every call is an L1 miss and an L2 hit (one Valkey round trip, then an L1 fill).`,
  cache_get_or_load_per_s: `EchoMQ \`getOrLoad\` / bentocache \`getOrSet\` calls/s over distinct keys nobody wrote, ${CACHE_IN_FLIGHT} in flight, with a synchronous loader returning the 100-byte payload: L1 miss, L2 miss, load, write to L2 and L1. The run checks the loader ran exactly once per key.`,
  cache_invalidation_lag_p50_ms:
    'median ms between two processes: a child (`node bench/dist/cache-worker.js`) holds the hot key in L1 and polls `get` in a tight `setImmediate` loop; the parent takes a timestamp, then `set`s a new value (EchoMQ: L2 write + announce on the invalidation log and signal; bentocache: L2 write + publish on its redis bus). The lag is the child\'s first sight of the new value minus the parent\'s timestamp (`process.hrtime`: the monotonic clock of the machine, one for both processes). The child confirms before each round that it still serves the old value.',
  cache_invalidation_lag_p99_ms: 'the 99th percentile of the same rounds.',
};

/** The targets (notes, not assertions): the ratio EchoMQ / bentocache a throughput row should reach, or the absolute bound of a lag row. */
export const CACHE_TARGETS: Readonly<Partial<Record<CacheMetric, { text: string; met: (e: number, b: number) => boolean }>>> = {
  cache_l1_hit_per_s: { text: '≥ 1.0× bentocache', met: (e, b) => e >= b },
  cache_l2_hit_per_s: { text: '≥ 1.5× bentocache', met: (e, b) => e >= 1.5 * b },
  cache_get_or_load_per_s: { text: '≥ 1.5× bentocache', met: (e, b) => e >= 1.5 * b },
  cache_invalidation_lag_p99_ms: { text: '< 5 ms', met: (e) => e < 5 },
};

function targetCell(m: CacheMetric, e: number, b: number): string {
  const t = CACHE_TARGETS[m];
  return t ? `${t.text}: ${t.met(e, b) ? '**met**' : '**missed**'}` : '—';
}

/** The medians of both systems as a Markdown table with ratios and targets. */
function cacheTable(report: CacheReport): string {
  const lines = ['| Metric | EchoMQ | bentocache | EchoMQ / bentocache | Better | Target (EchoMQ) |', '|---|---:|---:|---:|---|---|'];
  for (const m of CACHE_METRICS) {
    const e = report.results.echomq[m];
    const b = report.results.bentocache[m];
    const lower = cacheLowerIsBetter(m);
    const winner = (lower ? e < b : e > b) ? 'EchoMQ' : 'bentocache';
    lines.push(`| \`${m}\` | ${shown(m, e)} | ${shown(m, b)} | ${(e / b).toFixed(2)}× | ${lower ? 'lower' : 'higher'}: ${winner} | ${targetCell(m, e, b)} |`);
  }
  return lines.join('\n');
}

/** Every repetition of the cache rows (full runs only). */
function cacheRepetitions(report: CacheReport): string {
  if (report.reps < 2) return 'One repetition (quick run).';
  const lines = ['| Metric | EchoMQ runs | bentocache runs |', '|---|---|---|'];
  for (const m of CACHE_METRICS) {
    const runs = CACHE_SYSTEMS.map((sys) =>
      report.records
        .filter((r) => r.system === sys && r.values[m] !== undefined)
        .map((r) => shown(m, r.values[m] as number))
        .join(' · '),
    );
    lines.push(`| \`${m}\` | ${runs[0]} | ${runs[1]} |`);
  }
  return lines.join('\n');
}

/** The targets this run missed, as a sentence (or that it met them all). */
function verdict(report: CacheReport): string {
  const missed = CACHE_METRICS.filter((m) => {
    const t = CACHE_TARGETS[m];
    return t !== undefined && !t.met(report.results.echomq[m], report.results.bentocache[m]);
  });
  return missed.length === 0
    ? 'In this run EchoMQ met every target.'
    : `In this run EchoMQ missed the target on ${missed.map((m) => `\`${m}\` (${CACHE_TARGETS[m]?.text})`).join(', ')}; the reasons are below.`;
}

/** Notes the phases left (e.g. lag rounds that began without the old value in the child's L1). */
function cacheNotes(report: CacheReport): string {
  const notes = report.records.filter((r) => r.note).map((r) => `- #${r.rep + 1} ${r.phase}, ${r.system}: ${r.note}`);
  return notes.length === 0 ? '' : `\nNotes of this run:\n\n${notes.join('\n')}\n`;
}

/** The EchoMQ-only staleness figure (Bus event → refreshed page on the other instance), when measured. */
function stalenessSection(report: CacheReport): string {
  const st = report.staleness;
  if (!st) return '';
  const ms = (v: number): string => `${v.toFixed(2)} ms`;
  return `### Staleness: Bus event → refreshed page (EchoMQ only)

| p50 | p99 | max | publish → group handler (p50) | rounds |
|---:|---:|---:|---:|---:|
| ${ms(st.p50)} | ${ms(st.p99)} | ${ms(st.max)} | ${ms(st.deliveryP50)} | ${st.rounds} |

Method (\`bench/cache-staleness.ts\`, one run after the rows; alone: \`node bench/dist/cache-staleness.js\`):
two Nest app instances serve \`GET /products/:id\` through \`CacheInterceptor\` with
\`@CacheScope('public', { tags: (req) => ['product:' + req.params.id] })\`; instance A follows the
topic (\`cache.invalidateOn\`), instance B runs no consumers, so each refresh on B takes the whole
path: a plain producer's \`BusService.publish\`, A's consumer group, \`invalidateTag\`, the
invalidation log and signal, B's L1, and B's next GET (a miss that renders and caches the page).
Per round B first serves the old price as a HIT; the origin changes; the figure is the time from
just before \`publish\` to B's first response with the new price, B's GETs looping one
\`setImmediate\` apart. A, B and the producer share one process, so B's polling competes with A's
consumer and the figure is an upper bound; bentocache and @nestjs/cache-manager have no equivalent.

`;
}

/** Renders the "Cache" section of `docs/benchmarks.md`. */
export function cacheSection(report: CacheReport): string {
  const s = report.sizes;
  const n = (v: number): string => v.toLocaleString('en-US');
  const reps = report.reps > 1 ? `the median of ${report.reps} repetitions` : 'one repetition';
  return `## Cache: EchoMQ vs bentocache

EchoMQ's \`CacheService\` against [bentocache](https://bentocache.dev) ${report.bentocacheVersion}, both as a two-level
cache (in-process L1, shared L2 in Valkey) with cross-process L1 invalidation, measured on the same
Valkey in the same run as the rows above; each phase on a fresh namespace / prefix with FLUSHALL
in between, the order of the two systems alternating; every number is ${reps}. Written under
\`"cache": { "echomq": …, "bentocache": … }\` in \`bench/results.json\`. Counts per run: ${n(s.l1Hits)} L1 gets,
${n(s.l2Hits)} L2 gets, ${n(s.getOrLoad)} cold \`getOrLoad\`s, ${n(s.lagRounds)} invalidation rounds (after 20 untimed). Values: the
same 100 bytes of JSON as the queue phases. Targets are notes for EchoMQ, not assertions.

${cacheTable(report)}

${verdict(report)}
${cacheNotes(report)}
${CACHE_METRICS.map((m) => `- \`${m}\`: ${MEANING[m]}`).join('\n')}

${stalenessSection(report)}
### How the two caches are configured

- **EchoMQ:** one \`EchoMqConnection\` (iovalkey) per instance and \`new CacheService(conn, { namespace, ttlMs:
  ${n(CACHE_TTL_MS)}, l1MaxEntries: ${n(L1_MAX_ITEMS)} })\`; everything else its default (jitter 0.1, grace 0, no fill lease,
  \`pollMs\` 1,000, L1 bounded to 64 MiB). L1 holds JSON text and decodes it on every hit.
- **bentocache:** \`new BentoCache({ default, prefix, ttl: ${n(CACHE_TTL_MS)}, stores: { bench: bentostore()
  .useL1Layer(memoryDriver({ maxItems: ${n(L1_MAX_ITEMS)} })).useL2Layer(redisDriver({ connection }))
  .useBus(redisBusDriver({ connection })) } })\` with \`connection = { host, port }\` of the bench Valkey, so
  its L2 and its bus (a publisher and a subscriber) open their own ioredis clients. Everything else its
  default: L1 serialized (\`serializeL1: true\`, so it too decodes on every hit), no grace, no timeouts,
  the bus retry queue on. \`maxItems\` is raised from its default 1,000 to EchoMQ's 10,000.
- **Both:** one instance per role and process; the L2 and getOrLoad phases use a second instance of
  the same system in the same process (the writer), the lag phase a second process. Untimed warm-up:
  2,000 cold \`getOrLoad\`s and 20,000 L1 gets per system at the start.

### Trade-offs

- **L1 hits are local work.** Neither system touches Valkey; the difference is the call path. EchoMQ's
  \`get\` is a map lookup, a freshness check against \`Date.now()\` and a \`JSON.parse\`; bentocache's goes
  through its option resolution, a tracing channel and the deserialization of an
  item wrapper (\`{ value, logicalExpiration, tags, createdAt }\`).
- **An EchoMQ L2 read carries more than the value.** It is a \`cache-get.lua\` call returning \`HMGET v d n x g\` and
  \`PTTL\` of each entry atomically (the version, tombstone and negative flags, grace, and freshness from the server's
  clock), where a bentocache L2 hit is one \`GET\` of a serialized blob whose logical expiry is checked against the
  client's clock. On a standalone Valkey the L2 reads of one event-loop turn are one \`cache-get\` call of N entries
  (\`src/cache/read-batch.ts\`; a batch of 100 concurrent gets is one command, one script run and one reply): script
  time ~2.9 µs per entry (\`INFO commandstats\`, HMGET and PTTL included) against ~4.3 µs as one call per entry, and
  Valkey CPU per hit (\`used_cpu_user+sys\`) ~3.6 µs against bentocache's ~3.8 µs (its 100 \`GET\`s are 100 commands
  to parse and answer). On the client the batch is one command to encode and one reply to parse: ~7–8 µs of client
  CPU per hit (\`process.cpuUsage\`) against ~14 µs as one call per entry and ~15 µs for bentocache.
- **A cold EchoMQ \`getOrLoad\` is a read plus a script.** L2 read (\`MULTI\`), load, then \`cache-set.lua\`
  (the version compare that refuses a write older than a concurrent invalidation). bentocache does
  \`GET\`, load, \`SET\` and a bus \`PUBLISH\` per miss, guarded by an in-process lock per key. EchoMQ
  announces nothing on a load (a load never replaces a newer value), bentocache tells every instance.
- **Invalidation: a log versus a pub/sub message.** bentocache's bus is Redis pub/sub: the message
  itself names the key, the receiver deletes it from L1, the next \`get\` reads L2. Delivery is
  at most once: a subscriber that is reconnecting misses the message and serves the old value until its
  TTL (the retry queue only covers failed publishes). EchoMQ appends the invalidation to a bounded stream
  and \`SPUBLISH\`es a signal that, for up to 16 keys, names them: the receiver drops them from L1 on arrival
  (no extra round trip), then reads the stream as the source of truth, and the next \`get\` reads L2. The
  writer sends its \`cache-set\` and the announcement in one pipeline write. A missed signal is caught by the
  \`pollMs\` poll and a disconnect replays the log in order (docs/cache.md, "The staleness bound").
- **The lag rows measure a busy machine.** The child spins on \`get\` with \`setImmediate\`,
  so Valkey, the parent and the child compete for the CPUs listed under Machine above; the p99 is set by scheduling and GC pauses and
  moves from run to run (see every repetition below).

### Every repetition (cache rows)

${cacheRepetitions(report)}
`;
}
