import type { EchoMqConnection } from '../../core/connection/index.js';
import { EchoMqError } from '../../core/errors.js';
import { describeError, fromReplyError } from '../../core/reply-errors.js';
import { queueKeys } from '../../core/keys.js';
import { scheduleWire } from '../../core/wire/index.js';
import { decodeSchedule, planTick, specSha, type StoredSchedule } from './schedule-plan.js';
import { serverNow } from './schedule-service.js';
import type { TickRecord } from './schedule-types.js';

/** Options of a `Scheduler`. */
export interface SchedulerOptions {
  /** A tick is written this many ms ahead of its instant (as a scheduled job). Default 250. */
  readonly lookaheadMs?: number;
  /** Longest sleep between two reads of a queue's ticks (picks up schedules made elsewhere). Default 1000. */
  readonly maxSleepMs?: number;
  /** Called for each tick this process wrote (or skipped). */
  readonly onTick?: (t: TickRecord) => void;
  /** Where warnings go. Default: the connection's logger. */
  readonly logger?: { warn(message: string): void };
  /** The clock ticks are planned on (epoch ms). Default: the server's `TIME`; tests may shift it. */
  readonly clock?: () => Promise<number>;
}

/** A refusal that is about one schedule's stored data, not the connection. */
const isScheduleRefusal = (err: unknown): boolean => err instanceof EchoMqError && (err.code === 'EMQ_BAD_SCHEDULE' || err.code === 'EMQ_BAD_ARG');

/** Ticks due per queue per round. */
const ROUND = 100;

/**
 * The per-process schedule loop: for each watched queue, reads the earliest next ticks, turns
 * each due one into a job through tick.lua (compare-and-set: of all instances racing on a tick
 * exactly one wins, the others are refused harmlessly), then sleeps until the earliest next
 * tick (at most `maxSleepMs`). No busy waiting: an idle loop costs one read per queue per second.
 */
export class Scheduler {
  private readonly queues = new Set<string>();
  private readonly compiled = new Map<string, StoredSchedule>();
  private readonly warned = new Set<string>();
  private running?: Promise<void>;
  private stopped = true;
  /** Set by `stop()`: a round in flight ends after its current tick. */
  private halted = false;
  /** Removes the scheduler from the process description (`connection.process`) while it runs. */
  private undescribe?: () => void;
  private wake?: () => void;
  private readonly lookahead: number;
  private readonly maxSleep: number;
  private readonly clock: () => Promise<number>;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly options: SchedulerOptions = {},
  ) {
    this.lookahead = options.lookaheadMs ?? 250;
    this.maxSleep = options.maxSleepMs ?? 1000;
    this.clock = options.clock ?? (() => serverNow(conn));
  }

  private warn(message: string): void {
    (this.options.logger ?? this.conn.logger).warn(message);
  }

  /** Adds a queue to tick (idempotent); wakes the loop so a new schedule is seen at once. */
  watch(queue: string): void {
    queueKeys(queue);
    this.queues.add(queue);
    this.wake?.();
  }

  /** Starts the loop (idempotent). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.halted = false;
    this.undescribe = this.conn.process.add(() => ({ kind: 'role', role: 'scheduler' }));
    this.running = this.loop();
  }

  /** Stops the loop; resolves once the round in flight has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.halted = true;
    this.undescribe?.();
    this.wake?.();
    await this.running;
    this.running = undefined;
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      let sleep = this.maxSleep;
      try {
        for (const q of this.queues) sleep = Math.min(sleep, await this.round(q));
        failures = 0;
      } catch (err) {
        failures++;
        if (failures === 1 || failures % 30 === 0) this.warn(`scheduler: ${describeError(err)}`);
        sleep = this.maxSleep;
      }
      if (sleep > 0 && !this.stopped) await this.sleep(sleep);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    }).then(() => {
      this.wake = undefined;
    });
  }

  /** One round over one queue: ticks every due schedule; resolves to ms until the next one is due. */
  async round(queue: string): Promise<number> {
    const k = queueKeys(queue);
    const c = this.conn.client;
    const [now, earliest] = await Promise.all([this.clock(), c.zrange(k.ticks, 0, ROUND - 1, 'WITHSCORES')]).catch((err: unknown) => {
      throw fromReplyError(err);
    });
    let sleep = this.maxSleep;
    let ticked = false;
    for (let i = 0; i < earliest.length && !this.halted; i += 2) {
      const name = earliest[i];
      const due = Number(earliest[i + 1]);
      const wait = due - this.lookahead - now;
      if (wait > 0) {
        sleep = Math.min(sleep, wait);
        break;
      }
      try {
        await this.tick(queue, name, due, now);
        ticked = true; // advanced by this call or by another instance: read again at once
      } catch (err) {
        // A schedule this runtime cannot plan (a corrupt spec, a cron another runtime wrote)
        // must not stop the others: warn once per spec, go on.
        if (!isScheduleRefusal(err)) throw err;
        const what = `schedule ${queue}/${name} cannot be ticked: ${describeError(err)}`;
        if (!this.warned.has(what)) {
          if (this.warned.size > 1000) this.warned.clear();
          this.warned.add(what);
          this.warn(what);
        }
      }
    }
    return ticked ? 0 : sleep; // after a tick, read again at once: the next one may be due too
  }

  /** Plans and sends one tick; true when this call advanced the schedule (false: another did, or it is gone). */
  private async tick(queue: string, name: string, due: number, now: number): Promise<boolean> {
    const k = queueKeys(queue);
    let text: string | null;
    try {
      text = await this.conn.client.hget(k.schedules, name);
    } catch (err) {
      throw fromReplyError(err);
    }
    if (text === null) return false; // removed since the read
    let s = this.compiled.get(text);
    if (!s) {
      s = decodeSchedule(text);
      if (this.compiled.size > 1000) this.compiled.clear();
      this.compiled.set(text, s);
    }
    const plan = planTick(s, due, now);
    if (plan.write) await this.conn.ids.ready();
    for (let attempt = 0; attempt < 3; attempt++) {
      const id = plan.write ? this.conn.ids.next('job') : undefined;
      const r = await scheduleWire.tick(this.conn.scriptClient, k, { name, specSha: specSha(text), due, next: plan.next, id, runAt: plan.runAt });
      if (r === 'id-taken') continue;
      if (r === 'stale') return false;
      // Skipped without a job: missed ticks (policy "skip"), or the schedule ended (its endAt
      // passed, or tick.lua found its limit reached); only the first is worth a warning.
      const ended = plan.write || (s.end !== undefined && due > s.end);
      if (r === 'skipped' && !ended) this.warn(`schedule ${queue}/${name}: missed tick(s) from ${new Date(due).toISOString()} skipped (policy "skip")`);
      this.options.onTick?.({ queue, name, tick: due, ...(r === 'written' && id !== undefined ? { jobId: id } : {}) });
      return true;
    }
    return false;
  }
}
