import type { EchoMqConnection } from '../core/connection/index.js';
import { queueKeys } from '../core/keys.js';
import { logOnce, nameProblem, registryPage } from '../admin/registry.js';
import { describeError } from '../core/reply-errors.js';

/** How the sampler behind the throughput charts runs (`EchoMqDashboardOptions.throughput`). */
export interface ThroughputOptions {
  /** Milliseconds between samples, 250..60,000 (default 1,000). */
  readonly intervalMs?: number;
  /** Samples kept per queue (the chart's width), 10..1,000 (default 120: two minutes at 1 s). */
  readonly points?: number;
  /** Queues sampled: the first ones of the registry, in name order, 1..500 (default 50). */
  readonly maxQueues?: number;
  /** Sampling pauses when no page was served for this long, ms (default 300,000). */
  readonly idleAfterMs?: number;
}

/** Jobs finished per sample interval, oldest first: one entry per sample. */
export interface ThroughputSeries {
  /** Jobs that completed in each interval. */
  readonly done: readonly number[];
  /** Jobs that were buried (dead) in each interval. */
  readonly dead: readonly number[];
  /** The interval of one sample, ms. */
  readonly intervalMs: number;
}

/** Ticks between two reads of the registry (new queues join the sampling then). */
const NAMES_EVERY = 10;
/** Most queues sampled because their page was viewed, beyond the registry's first `maxQueues`. */
const WATCHED = 20;

/**
 * The throughput behind the dashboard's charts, kept cheap: while a page was served recently,
 * every `intervalMs` it reads the server's `TIME` and, per sampled queue (the registry's first
 * `maxQueues`, plus the last 20 queues whose page was viewed), `ZCOUNT` of `done` and
 * `dead` over the window since the previous sample (their scores are the server's finish
 * instants), into a ring of `points` samples. Nothing is written to Valkey; nothing is kept
 * across restarts. A queue that keeps fewer done rows than it completes in one interval
 * (`keepDone`) is undercounted (docs/dashboard.md).
 */
export class ThroughputSampler {
  private readonly intervalMs: number;
  private readonly points: number;
  private readonly maxQueues: number;
  private readonly idleAfterMs: number;
  private readonly rings = new Map<string, { done: number[]; dead: number[] }>();
  private names: string[] = [];
  /** Queues whose page was viewed lately (newest last), sampled even beyond `maxQueues`. */
  private readonly watched = new Set<string>();
  private timer?: NodeJS.Timeout;
  private last?: number;
  private ticks = 0;
  private viewedAt = Date.now();
  private running?: Promise<void>;

  constructor(
    private readonly conn: EchoMqConnection,
    o: ThroughputOptions = {},
  ) {
    this.intervalMs = o.intervalMs ?? 1000;
    this.points = o.points ?? 120;
    this.maxQueues = o.maxQueues ?? 50;
    this.idleAfterMs = o.idleAfterMs ?? 300_000;
  }

  /** Starts sampling (idempotent). */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (!this.running) this.running = this.tick().finally(() => (this.running = undefined));
    }, this.intervalMs);
    this.timer.unref();
  }

  /** Stops sampling and waits for a sample in flight. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Marks the dashboard (and `queue`'s page, if given) as viewed; sampling resumes if it had paused. */
  touch(queue?: string): void {
    this.viewedAt = Date.now();
    if (queue === undefined) return;
    this.watched.delete(queue);
    this.watched.add(queue);
    if (this.watched.size > WATCHED) this.watched.delete(this.watched.values().next().value as string);
  }

  /** The samples of one queue (empty until two samples were taken). */
  series(queue: string): ThroughputSeries {
    const r = this.rings.get(queue);
    return { done: r ? [...r.done] : [], dead: r ? [...r.dead] : [], intervalMs: this.intervalMs };
  }

  /** The samples of every sampled queue added up. */
  total(): ThroughputSeries {
    const done: number[] = [];
    const dead: number[] = [];
    for (const r of this.rings.values()) {
      const off = this.points - r.done.length;
      r.done.forEach((n, i) => (done[off + i] = (done[off + i] ?? 0) + n));
      r.dead.forEach((n, i) => (dead[off + i] = (dead[off + i] ?? 0) + n));
    }
    const first = done.findIndex((n) => n !== undefined);
    return { done: first < 0 ? [] : done.slice(first).map((n) => n ?? 0), dead: first < 0 ? [] : dead.slice(first).map((n) => n ?? 0), intervalMs: this.intervalMs };
  }

  private async tick(): Promise<void> {
    if (Date.now() - this.viewedAt > this.idleAfterMs) {
      this.last = undefined; // the next window starts when someone looks again
      return;
    }
    const c = this.conn.client;
    let now: number;
    let from: number | undefined;
    try {
      if (this.ticks++ % NAMES_EVERY === 0) this.names = (await registryPage(this.conn, 'queues', undefined, this.maxQueues)).names;
      const [s, us] = await c.time();
      now = Number(s) * 1000 + Math.floor(Number(us) / 1000);
      from = this.last;
      this.last = now;
    } catch {
      this.last = undefined; // an outage: the chart shows a gap rather than a spike
      return;
    }
    if (from === undefined) return;
    // Each queue on its own: a registry entry that is not a queue name (planted by hand) is never
    // read, and a queue whose index cannot be read (a key of another type) gets no sample; the
    // others are sampled as usual. Each trouble is logged once.
    const names = [...new Set([...this.names, ...this.watched])];
    await Promise.all(
      names.map(async (q) => {
        const bad = nameProblem(q, 'queue');
        if (bad) return logOnce(this.conn, `sampler\0${q}`, `EchoMQ dashboard: not sampling the registry entry ${JSON.stringify(q.slice(0, 120))}: ${bad}`);
        try {
          const k = queueKeys(q);
          const [done, dead] = await Promise.all([c.zcount(k.done, `(${from}`, now), c.zcount(k.dead, `(${from}`, now)]);
          this.push(q, done, dead);
        } catch (err) {
          logOnce(this.conn, `sampler\0${q}`, `EchoMQ dashboard: cannot sample the throughput of queue ${q}: ${describeError(err)}`);
        }
      }),
    );
  }

  private push(queue: string, done: number, dead: number): void {
    let r = this.rings.get(queue);
    if (!r) this.rings.set(queue, (r = { done: [], dead: [] }));
    r.done.push(done);
    r.dead.push(dead);
    if (r.done.length > this.points) {
      r.done.shift();
      r.dead.shift();
    }
  }
}
