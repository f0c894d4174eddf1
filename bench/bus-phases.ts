/**
 * The Bus phases (EchoMQ only) and the queue's lifecycle-log phase. Like the queue phases, each
 * uses a fresh random topic or queue, closes everything it opened, and FLUSHALLs at the end.
 */
import { IN_FLIGHT, inLanes, nowMs, payload100, percentile, randomQueue, sleep, type StampPayload } from './common.js';
import { BUILTIN_DEFAULTS, resolveDefaults } from '@echomq/nestjs/unstable';
import { BUS_ANCHORS, BUS_READ_AHEAD, BusInspector, EVENTS_LOG_ENTRIES, EVENTS_LOG_METRIC, openMember, openPublisher, prefill, publishBatches, type Member } from './bus.js';
import { RAW_C1_COUNT1_METRIC, openRawMember, openRawPublisher } from './bus-raw.js';
import { EchoMqDriver } from './echomq.js';
import { Counter, WARMUP, processLocal, steady, warmCount, type PhaseContext, type PhaseResult } from './phases.js';

/** Publishes `n` payloads 1,000 per `publishMany`, one call in flight. */
/** `bus_publish_single_per_s`: `n` `BusService.publish` calls, `IN_FLIGHT` at a time. */
export async function busPublishSingle(ctx: PhaseContext, n: number): Promise<PhaseResult> {
  const { url, probe } = ctx;
  const topic = randomQueue('bsingle');
  const pub = await openPublisher(url);
  try {
    await inLanes(warmCount(ctx, n, WARMUP), IN_FLIGHT, (i) => pub.bus.publish(topic, payload100(i)));
    const m = await probe.start();
    await inLanes(n, IN_FLIGHT, (i) => pub.bus.publish(topic, payload100(i)));
    const cost = await m.stop(n);
    return { values: { bus_publish_single_per_s: n / cost.seconds }, cost };
  } finally {
    await pub.close();
    await probe.flush();
  }
}

/** `bus_publish_batch_per_s`: `n` events 1,000 per `publishMany`, one call in flight. */
export async function busPublishBatch(ctx: PhaseContext, n: number): Promise<PhaseResult> {
  const { url, probe } = ctx;
  const topic = randomQueue('bbatch');
  const pub = await openPublisher(url);
  try {
    await publishBatches(pub, topic, warmCount(ctx, n, WARMUP), payload100);
    const m = await probe.start();
    await publishBatches(pub, topic, n, payload100);
    const cost = await m.stop(n);
    return { values: { bus_publish_batch_per_s: n / cost.seconds }, cost };
  } finally {
    await pub.close();
    await probe.flush();
  }
}

/** How `busGroup` reads: EchoMQ's member (with `prefetch`, default 0) or the raw loop (`COUNT count`, default 50). */
export interface GroupSide {
  /** The hand-written loop of `bus-raw.ts` instead of `GroupConsumer`. */
  readonly raw?: boolean;
  /** The raw loop's `XREADGROUP … COUNT` (default `RAW_READ_COUNT`). */
  readonly count?: number;
  /** The member's read-ahead (`prefetch`; default 0). */
  readonly prefetch?: number;
}

/**
 * `bus_group_c<c>_per_s`: pre-publishes warm-up + `n` events (untimed), starts one `GroupConsumer`
 * of concurrency `c` with a no-op handler (its `start()` creates the group at the start of the
 * log), and times the last `n`: from the moment it handled the warm-up events until every handler
 * ran and the group's `XPENDING` summary shows 0 (all acked). Without a warm-up (`bench:ab`) the
 * clock starts with `start()`. With `side.raw`, the member is the hand-written loop of `bus-raw.ts`
 * instead (the anchor `raw_group_c<c>_per_s`), over the same published log; `side.prefetch` gives
 * the member read-ahead.
 */
export async function busGroup(ctx: PhaseContext, metric: string, c: number, n: number, side: GroupSide = {}): Promise<PhaseResult> {
  const { url, probe } = ctx;
  const topic = randomQueue(`bc${c}`);
  const warm = warmCount(ctx, n, 0);
  await prefill(url, topic, warm + n);
  const inspect = new BusInspector(url);
  const handled = new Counter();
  const member: Member = side.raw ? openRawMember(url, topic, c, handled.tick, side.count) : await openMember(url, topic, c, handled.tick, side.prefetch);
  try {
    let m = warm > 0 ? undefined : await probe.start();
    await member.start();
    await handled.reach(warm);
    m ??= await probe.start(() => handled.value);
    await handled.reach(warm + n);
    await inspect.acked(topic);
    const jobs = warm + n - m.startMark;
    const cost = await m.stop(jobs);
    return { values: { [metric]: jobs / cost.seconds }, cost, note: handled.value === warm + n ? undefined : `handled ${handled.value} of ${warm + n}` };
  } finally {
    await member.close();
    await inspect.close();
    await probe.flush();
  }
}

/**
 * The raw anchors of `bus_group_c1_per_s`: `raw_group_c1_per_s` (COUNT 50, the anchor of the
 * table) and then `raw_group_c1_count1_per_s` (COUNT 1), each on its own topic; the first one's cost.
 */
export async function rawGroupC1(ctx: PhaseContext, n: number): Promise<PhaseResult> {
  const a = await busGroup(ctx, BUS_ANCHORS.bus_group_c1_per_s, 1, n, { raw: true });
  const b = await busGroup(ctx, RAW_C1_COUNT1_METRIC, 1, n, { raw: true, count: 1 });
  return { values: { ...a.values, ...b.values }, cost: a.cost, note: [a.note, b.note].filter(Boolean).join('; ') || undefined };
}

/** `bus_group_c1_prefetch50_per_s`: the c1 group member with `prefetch: 50` (`BUS_READ_AHEAD`) over `n` events. */
export function busGroupReadAhead(ctx: PhaseContext, n: number): Promise<PhaseResult> {
  return busGroup(ctx, 'bus_group_c1_prefetch50_per_s', 1, n, { prefetch: BUS_READ_AHEAD });
}

/** `raw_group_c1_ra_per_s`: the anchor of the read-ahead row, the raw c1 loop reading `COUNT 50` (`rawGroupC1`'s first loop). */
export function rawGroupC1ReadAhead(ctx: PhaseContext, n: number): Promise<PhaseResult> {
  return busGroup(ctx, BUS_ANCHORS.bus_group_c1_prefetch50_per_s, 1, n, { raw: true });
}

/** `raw_xadd_single_per_s`: `n` raw `XADD`s, `IN_FLIGHT` at a time, after as many untimed ones as `busPublishSingle`. */
export async function rawPublishSingle(ctx: PhaseContext, n: number): Promise<PhaseResult> {
  const { url, probe } = ctx;
  const topic = randomQueue('rsingle');
  const pub = openRawPublisher(url);
  try {
    await pub.single(topic, warmCount(ctx, n, WARMUP));
    const m = await probe.start();
    await pub.single(topic, n);
    const cost = await m.stop(n);
    return { values: { raw_xadd_single_per_s: n / cost.seconds }, cost };
  } finally {
    await pub.close();
    await probe.flush();
  }
}

/** `raw_xadd_batch_per_s`: `n` raw `XADD`s in pipelines of 1,000, one pipeline in flight. */
export async function rawPublishBatch(ctx: PhaseContext, n: number): Promise<PhaseResult> {
  const { url, probe } = ctx;
  const topic = randomQueue('rbatch');
  const pub = openRawPublisher(url);
  try {
    await pub.batch(topic, warmCount(ctx, n, WARMUP));
    const m = await probe.start();
    await pub.batch(topic, n);
    const cost = await m.stop(n);
    return { values: { raw_xadd_batch_per_s: n / cost.seconds }, cost };
  } finally {
    await pub.close();
    await probe.flush();
  }
}

/**
 * One Bus row and its raw anchor in one phase, the order alternating with the repetition (EchoMQ
 * first in even ones): the values of both, EchoMQ's cost as the phase's, the anchor's as
 * `anchorCost`. Each run has its own topic, warm-up and clock, and FLUSHALLs after itself.
 */
export async function withAnchor(ctx: PhaseContext, own: (c: PhaseContext) => Promise<PhaseResult>, anchor: (c: PhaseContext) => Promise<PhaseResult>): Promise<PhaseResult> {
  const ownFirst = (ctx.rep ?? 0) % 2 === 0;
  const first = await (ownFirst ? own : anchor)(ctx);
  const second = await (ownFirst ? anchor : own)(ctx);
  const [e, a] = ownFirst ? [first, second] : [second, first];
  const notes = [e.note, a.note && `raw: ${a.note}`, ownFirst ? undefined : 'raw ran first'].filter(Boolean);
  return { values: { ...e.values, ...a.values }, cost: e.cost, anchorCost: a.cost, note: notes.length > 0 ? notes.join('; ') : undefined };
}

/**
 * `bus_latency_p50_ms` / `bus_latency_p99_ms`: a steady `rate` of single publishes for `seconds`
 * into a running group member (same process, concurrency `conc`) whose handler records now − the
 * publish instant carried by the payload.
 */
export async function busLatency(ctx: PhaseContext, rate: number, seconds: number, conc: number): Promise<PhaseResult> {
  const { url, probe } = ctx;
  const topic = randomQueue('blat');
  const samples: number[] = [];
  let received = 0;
  const member = await openMember(url, topic, conc, (e) => {
    const at = nowMs();
    const s = e.payload as StampPayload;
    received++;
    if (s.m) samples.push(at - s.t);
  });
  await member.start();
  const pub = await openPublisher(url);
  try {
    const n = Math.round(rate * seconds);
    const warm = warmCount(ctx, n, Math.round(rate / 2));
    await steady((s) => pub.bus.publish(topic, s), rate, warm, false);
    const m = await probe.start();
    await steady((s) => pub.bus.publish(topic, s), rate, n, true);
    while (received < warm + n) await sleep(1);
    const cost = await m.stop(n);
    samples.sort((a, b) => a - b);
    return {
      values: { bus_latency_p50_ms: percentile(samples, 0.5), bus_latency_p99_ms: percentile(samples, 0.99) },
      cost,
      note: `${samples.length} samples, max ${samples[samples.length - 1].toFixed(2)} ms`,
    };
  } finally {
    await pub.close();
    await member.close();
    await probe.flush();
  }
}

/**
 * `process_c50_events_log_per_s`: the `process_c50_per_s` phase (`n` jobs, one in-process consumer
 * of concurrency 50, `keepDone` 1000) for EchoMQ with `eventsLog: 10000` on the queue defaults of
 * its producer and consumer, so every transition is also appended to the bounded lifecycle stream.
 */
export async function processEventsLog(ctx: PhaseContext, n: number): Promise<PhaseResult> {
  const driver = new EchoMqDriver(ctx.url, resolveDefaults(BUILTIN_DEFAULTS, { eventsLog: EVENTS_LOG_ENTRIES }));
  try {
    return await processLocal({ ...ctx, driver }, EVENTS_LOG_METRIC, 50, n);
  } finally {
    await driver.close();
  }
}
