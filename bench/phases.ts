/**
 * The benchmark phases, written once against the `Driver` interface and run for each system.
 * Every phase uses a fresh random queue, closes everything it opened, and FLUSHALLs at the end.
 */
import { ChildWorkers } from './children.js';
import {
  IN_FLIGHT,
  inBatches,
  inLanes,
  nowMs,
  payload100,
  percentile,
  randomQueue,
  sleep,
  type Driver,
  type ConsumerOptions,
  type LaneOptions,
  type StampPayload,
} from './common.js';
import type { PhaseCost, Probe } from './probe.js';

/** The outcome of one phase for one system. */
export interface PhaseResult {
  /** The metric (or metrics) the phase measured. */
  readonly values: Readonly<Record<string, number>>;
  /** Per-job cost, when the phase is a throughput or latency phase. */
  readonly cost?: PhaseCost;
  /** Anything worth printing (e.g. how work split between processes). */
  readonly note?: string;
  /**
   * The cost of the anchor measured inside the same phase (the Bus rows' raw loop, `bus-raw.ts`):
   * its values sit beside the system's in `values`.
   */
  readonly anchorCost?: PhaseCost;
}

/** The context every phase runs in. */
export interface PhaseContext {
  readonly driver: Driver;
  readonly probe: Probe;
  readonly url: string;
  /**
   * Untimed work before the clock starts, as a multiple of the timed count (`BenchSizes.warmup`).
   * Absent (as `bench:ab` calls the phases): each phase's own short warm-up, as before.
   */
  readonly warmup?: number;
  /** The repetition (0-based) the phase runs in: a phase that pairs two runs alternates their order by it. */
  readonly rep?: number;
}

/** Untimed calls before each enqueue or publish phase when the context sets no `warmup`. */
export const WARMUP = 2000;

/** The untimed count before `n` timed ones: `ctx.warmup × n`, or `legacy` without it. */
export function warmCount(ctx: Pick<PhaseContext, 'warmup'>, n: number, legacy: number): number {
  return ctx.warmup === undefined ? legacy : Math.ceil(ctx.warmup * n);
}

/** Counts handler runs and resolves a promise once the count reaches a threshold. */
export class Counter {
  /** Runs so far. */
  value = 0;
  private readonly waits: { n: number; resolve: () => void }[] = [];

  /** One more run. */
  readonly tick = (): void => {
    this.value++;
    for (let i = this.waits.length - 1; i >= 0; i--) {
      if (this.value >= this.waits[i].n) this.waits.splice(i, 1)[0].resolve();
    }
  };

  /** Resolves once the count is at least `n`. */
  reach(n: number): Promise<void> {
    if (this.value >= n) return Promise.resolve();
    return new Promise((resolve) => this.waits.push({ n, resolve }));
  }
}

/** Resolves once Valkey shows no unfinished job of `queue`. */
export async function drained(d: Driver, queue: string, timeoutMs = 120_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while ((await d.unfinished(queue)) > 0) {
    if (Date.now() > until) throw new Error(`${d.name}: queue ${queue} did not drain in ${timeoutMs} ms`);
    await sleep(1);
  }
}

/** `enqueue_single_per_s`: `n` single enqueues, `IN_FLIGHT` at a time, after the warm-up ones. */
export async function enqueueSingle(ctx: PhaseContext, n: number): Promise<PhaseResult> {
  const { driver, probe } = ctx;
  const p = await driver.producer(randomQueue('single'));
  try {
    await inLanes(warmCount(ctx, n, WARMUP), IN_FLIGHT, (i) => p.add(payload100(i)));
    const m = await probe.start();
    await inLanes(n, IN_FLIGHT, (i) => p.add(payload100(i)));
    const cost = await m.stop(n);
    return { values: { enqueue_single_per_s: n / cost.seconds }, cost };
  } finally {
    await p.close();
    await probe.flush();
  }
}

/** `enqueue_batch_per_s`: `n` jobs in batches of 1,000, one batch in flight, after the warm-up ones. */
export async function enqueueBatch(ctx: PhaseContext, n: number): Promise<PhaseResult> {
  const { driver, probe } = ctx;
  const p = await driver.producer(randomQueue('batch'));
  try {
    await inBatches(p, warmCount(ctx, n, WARMUP), payload100);
    const m = await probe.start();
    await inBatches(p, n, payload100);
    const cost = await m.stop(n);
    return { values: { enqueue_batch_per_s: n / cost.seconds }, cost };
  } finally {
    await p.close();
    await probe.flush();
  }
}

/** How `processLocal` runs besides the concurrency. */
export interface ProcessOptions extends ConsumerOptions {
  /** Jobs left pending behind the timed ones: the clock stops when the timed ones ran, not at drain. */
  readonly backlog?: number;
}

/**
 * `process_c<c>_per_s`: pre-enqueues warm-up + `n` jobs (untimed), starts one in-process consumer
 * of concurrency `c`, and times the last `n`: from the moment the warm-up jobs have run (the
 * consumer is at full speed) until every handler ran and Valkey shows nothing left. With
 * `opts.backlog`, that many more jobs stay pending behind them and the clock stops once the
 * timed jobs ran. Without a warm-up (`bench:ab`) the clock starts with the consumer.
 */
export async function processLocal(ctx: PhaseContext, metric: string, c: number, n: number, lanes?: LaneOptions, opts: ProcessOptions = {}): Promise<PhaseResult> {
  const { driver, probe } = ctx;
  const queue = randomQueue(`c${c}`);
  const warm = warmCount(ctx, n, 0);
  const backlog = opts.backlog ?? 0;
  const p = await driver.producer(queue, lanes);
  await inBatches(p, warm + n + backlog, payload100);
  await p.close();
  const ran = new Counter();
  const consumer = await driver.consumer(queue, c, ran.tick, opts);
  try {
    let m = warm > 0 ? undefined : await probe.start();
    await consumer.start();
    await ran.reach(warm);
    m ??= await probe.start(() => ran.value);
    await ran.reach(warm + n);
    if (backlog === 0) await drained(driver, queue);
    const jobs = backlog === 0 ? warm + n - m.startMark : ran.value - m.startMark;
    const cost = await m.stop(jobs);
    return { values: { [metric]: jobs / cost.seconds }, cost };
  } finally {
    await consumer.close();
    await probe.flush();
  }
}

/**
 * `process_<k>x<c>_per_s`: pre-enqueues warm-up + `n` jobs, spawns `k` child processes (each one
 * consumer of concurrency `c`), tells them to go, and times the last `n` jobs: from the moment
 * the children together ran the warm-up jobs until they ran all and Valkey shows nothing left.
 * The children's CPU over the timed part counts as client CPU.
 */
export async function processChildren(ctx: PhaseContext, metric: string, k: number, c: number, n: number): Promise<PhaseResult> {
  const { driver, probe, url } = ctx;
  const queue = randomQueue(`${k}x${c}`);
  const warm = warmCount(ctx, n, 0);
  const p = await driver.producer(queue);
  await inBatches(p, warm + n, payload100);
  await p.close();
  const children = await ChildWorkers.spawn(k, { system: driver.name, url, queue, concurrency: c });
  try {
    let m = warm > 0 ? undefined : await probe.start();
    children.go();
    await children.reached(warm);
    m ??= await probe.start(() => children.total);
    const cpu0 = children.cpuUs;
    await children.reached(warm + n);
    await drained(driver, queue);
    const jobs = warm + n - m.startMark;
    const cost = await m.stop(jobs, children.cpuUs - cpu0);
    const report = await children.stop();
    return { values: { [metric]: jobs / cost.seconds }, cost, note: `jobs per process: ${report.processed.join(' / ')}` };
  } finally {
    await children.stop();
    await probe.flush();
  }
}

/** Adds `count` jobs (or events) at `rate` per second, one call each, stamped with the call instant. */
export async function steady(add: (s: StampPayload) => Promise<unknown>, rate: number, count: number, measured: boolean): Promise<void> {
  const every = 1000 / rate;
  const t0 = performance.now();
  const calls: Promise<unknown>[] = [];
  for (let k = 0; k < count; k++) {
    const wait = t0 + k * every - performance.now();
    if (wait >= 1) await sleep(wait);
    calls.push(add({ t: nowMs(), m: measured }));
  }
  await Promise.all(calls);
}

/**
 * `<name>_p50_ms` / `<name>_p99_ms` (`name` default `latency`: the 500/s row; `latency_5k` for the
 * 5,000/s one): a steady `rate` of single enqueues for `seconds`, into a running consumer (same
 * process, concurrency `conc`) whose handler records now − enqueue instant.
 */
export async function latency(ctx: PhaseContext, rate: number, seconds: number, conc: number, name = 'latency'): Promise<PhaseResult> {
  const { driver, probe } = ctx;
  const queue = randomQueue('lat');
  const samples: number[] = [];
  let received = 0;
  const consumer = await driver.consumer(queue, conc, (payload) => {
    const at = nowMs();
    const s = payload as StampPayload;
    received++;
    if (s.m) samples.push(at - s.t);
  });
  await consumer.start();
  const p = await driver.producer(queue);
  try {
    const n = Math.round(rate * seconds);
    const warm = warmCount(ctx, n, Math.round(rate / 2));
    await steady((s) => p.add(s), rate, warm, false);
    const m = await probe.start();
    await steady((s) => p.add(s), rate, n, true);
    while (received < warm + n) await sleep(1);
    const cost = await m.stop(n);
    samples.sort((a, b) => a - b);
    return {
      values: { [`${name}_p50_ms`]: percentile(samples, 0.5), [`${name}_p99_ms`]: percentile(samples, 0.99) },
      cost,
      note: `${samples.length} samples, max ${samples[samples.length - 1].toFixed(2)} ms`,
    };
  } finally {
    await p.close();
    await consumer.close();
    await probe.flush();
  }
}

/**
 * `bytes_per_pending_job`: `used_memory` after minus before enqueueing `n` pending jobs with a
 * 100-byte payload (no consumer), divided by `n`. The producer is disconnected at both readings,
 * so client buffers do not count.
 */
export async function memory({ driver, probe }: PhaseContext, n: number): Promise<PhaseResult> {
  await probe.flush();
  // Load the scripts and the id lease first, on another queue, so only the jobs are counted.
  const warm = await driver.producer(randomQueue('memwarm'));
  await warm.addBatch([payload100(0)]);
  await warm.add(payload100(1));
  await warm.close();
  await sleep(100);
  const before = await probe.usedMemory();
  const queue = randomQueue('mem');
  const p = await driver.producer(queue);
  await inBatches(p, n, payload100);
  await p.close();
  await sleep(100);
  const after = await probe.usedMemory();
  const breakdown = `MEMORY USAGE bytes per job: ${await probe.keyBreakdown(queue, n)}`;
  await probe.flush();
  return { values: { bytes_per_pending_job: (after - before) / n }, note: breakdown };
}
