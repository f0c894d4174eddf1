import type { Json } from '../../core/codec.js';
import type { BackoffOptions } from '../base-options.js';

/** When a schedule fires: a cron expression in a time zone, or a fixed interval. */
export type ScheduleSpec =
  | {
      /** A cron expression (croner syntax: 5 fields, or 6 with seconds first; `@daily` and the like). */
      readonly cron: string;
      /** IANA time zone the expression is read in (default UTC). */
      readonly tz?: string;
    }
  | {
      /** Fire every this many ms (50..315,360,000,000), the first tick one interval after the schedule is created. */
      readonly every: number;
    };

/** What to do with ticks missed while no instance was running: drop them, or run one catch-up job. */
export type MissedPolicy = 'skip' | 'once';

/** Options of a schedule. */
export interface ScheduleOptions {
  /** Ticks more than `graceMs` late: `skip` (default) drops them, `once` runs one catch-up job for them. */
  readonly missed?: MissedPolicy;
  /** How late a tick may run and still count as on time (0..86,400,000 ms). Default 5000. */
  readonly graceMs?: number;
  /** Attempts of each job (default: the consumer's). */
  readonly attempts?: number;
  /** Backoff of each job (default: the consumer's). */
  readonly backoff?: BackoffOptions;
  /** Fire at most this many times (1..1,000,000,000), then the schedule ends. Run-now jobs do not count. */
  readonly limit?: number;
  /** No tick before this instant (a Date or epoch ms): the first tick is the first one at or after it. */
  readonly startAt?: Date | number;
  /** No tick after this instant (a Date or epoch ms): the schedule ends at its last tick before it. */
  readonly endAt?: Date | number;
}

/** A schedule as `@Processor(queue, { schedules: [...] })` declares it. */
export type ProcessorSchedule = ScheduleSpec &
  ScheduleOptions & {
    /** The schedule's name, unique in its queue (the key grammar's name rules). */
    readonly name: string;
    /** The payload of each job (default `null`). */
    readonly payload?: Json;
  };

/** A stored schedule, as `QueueService.schedules(queue)` reads it. */
export interface ScheduleInfo<T = Json> {
  /** Its name. */
  readonly name: string;
  /** The cron expression, for a cron schedule. */
  readonly cron?: string;
  /** The time zone of the cron expression. */
  readonly tz?: string;
  /** The interval in ms, for an interval schedule. */
  readonly every?: number;
  /** The payload each job gets. */
  readonly payload: T;
  /** The missed-tick policy. */
  readonly missed: MissedPolicy;
  /** How late a tick may run and still count as on time (ms). */
  readonly graceMs: number;
  /** Attempts of each job, when set. */
  readonly attempts?: number;
  /** Wire form of each job's backoff (`f:<ms>` / `e:<ms>`), when set. */
  readonly backoff?: string;
  /** At most this many jobs from its ticks, when set. */
  readonly limit?: number;
  /** No tick before this instant, when set. */
  readonly startAt?: Date;
  /** No tick after this instant, when set. */
  readonly endAt?: Date;
  /** Jobs its ticks wrote, counted for a schedule with a `limit` (0 otherwise). */
  readonly fired: number;
  /** The next tick (server clock), or null when the schedule has no more ticks. */
  readonly next: Date | null;
}

/** One tick this process turned into a job (or skipped), as the scheduler reports it. */
export interface TickRecord {
  /** The queue. */
  readonly queue: string;
  /** The schedule's name. */
  readonly name: string;
  /** The tick's instant (epoch ms). */
  readonly tick: number;
  /** The job written for it; absent when the tick was skipped (missed, policy `skip`). */
  readonly jobId?: string;
}
