import { createHash } from 'node:crypto';
import { InvalidScheduleError } from '../../core/errors.js';
import { encodePayload } from '../../core/codec.js';
import { assertName } from '../../core/keys.js';
import { keySet, refuseUnknownKeys } from '../../core/known-keys.js';
import { compileCron, type NextTick } from './cron.js';
import { MAX_DELAY_MS, MAX_RUN_AT_MS, backoffWire, checkAttempts } from '../base-options.js';
import type { MissedPolicy, ProcessorSchedule, ScheduleOptions, ScheduleSpec } from './schedule-types.js';

/** Shortest interval (ms). */
export const MIN_EVERY_MS = 50;
/** Default lateness a tick may have and still count as on time (ms). */
export const DEFAULT_GRACE_MS = 5000;
const MAX_GRACE_MS = 86_400_000;

/** A schedule as stored (the spec text's fields), with its compiled next-tick function. */
export interface StoredSchedule {
  readonly cron?: string;
  readonly tz?: string;
  readonly every?: number;
  /** The job payload (JSON text). */
  readonly payload: string;
  readonly missed: MissedPolicy;
  readonly grace: number;
  readonly attempts?: number;
  readonly backoff?: string;
  /** At most this many jobs from ticks (tick.lua counts them in `fires`). */
  readonly limit?: number;
  /** No tick before (epoch ms). */
  readonly start?: number;
  /** No tick after (epoch ms). */
  readonly end?: number;
  /** The first tick strictly after an instant (null: none). */
  readonly nextAfter: NextTick;
}

const SPEC_KEYS = keySet<{ cron: true; tz: true; every: true }>({ cron: true, tz: true, every: true });
const OPTION_KEYS = keySet<ScheduleOptions>({ missed: true, graceMs: true, attempts: true, backoff: true, limit: true, startAt: true, endAt: true });
const MAX_LIMIT = 1_000_000_000;

/** An instant option (a Date or epoch ms in 0..MAX_RUN_AT_MS), else `InvalidScheduleError`. */
function instant(v: Date | number | undefined, what: string): number | undefined {
  if (v === undefined) return undefined;
  const t = v instanceof Date ? v.getTime() : v;
  if (typeof t !== 'number' || !Number.isFinite(t) || t < 0 || t > MAX_RUN_AT_MS) {
    throw new InvalidScheduleError(`${what} must be a Date or epoch ms in 0..${MAX_RUN_AT_MS}, got ${String(v)}`);
  }
  return Math.ceil(t);
}

function compile(cron: unknown, tz: unknown, every: unknown): NextTick {
  if (cron !== undefined) {
    if (every !== undefined) throw new InvalidScheduleError('give cron or every, not both');
    return compileCron(cron, tz);
  }
  if (tz !== undefined) throw new InvalidScheduleError('tz applies to a cron schedule only');
  if (typeof every !== 'number' || !Number.isInteger(every) || every < MIN_EVERY_MS || every > MAX_DELAY_MS) {
    throw new InvalidScheduleError(`every must be an integer number of ms in ${MIN_EVERY_MS}..${MAX_DELAY_MS}, got ${String(every)}`);
  }
  return (after) => after + every;
}

/**
 * Validates a spec and its options (unknown keys, a bad cron or zone, an interval out of range:
 * `InvalidScheduleError`; bad attempts or backoff: `InvalidOptionError`) and renders the spec
 * text stored in Valkey. The same inputs always render the same text, which is what makes a
 * repeated declaration a no-op. `payload` is the payload's JSON text.
 */
export function encodeSchedule(spec: ScheduleSpec, payload: string, opts: ScheduleOptions = {}): { text: string; stored: StoredSchedule } {
  if (typeof spec !== 'object' || spec === null) throw new InvalidScheduleError('a schedule spec must be { cron, tz? } or { every }');
  refuseUnknownKeys(spec, SPEC_KEYS, 'schedule spec keys');
  refuseUnknownKeys(opts, OPTION_KEYS, 'schedule option keys');
  const s = spec as { cron?: unknown; tz?: unknown; every?: unknown };
  const nextAfter = compile(s.cron, s.tz, s.every);
  const missed = opts.missed ?? 'skip';
  if (missed !== 'skip' && missed !== 'once') throw new InvalidScheduleError(`missed must be "skip" or "once", got ${String(missed)}`);
  const grace = opts.graceMs ?? DEFAULT_GRACE_MS;
  if (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0 || grace > MAX_GRACE_MS) {
    throw new InvalidScheduleError(`graceMs must be an integer in 0..${MAX_GRACE_MS}, got ${String(grace)}`);
  }
  const limit = opts.limit;
  if (limit !== undefined && (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)) {
    throw new InvalidScheduleError(`limit must be an integer in 1..${MAX_LIMIT}, got ${String(limit)}`);
  }
  const start = instant(opts.startAt, 'startAt');
  const end = instant(opts.endAt, 'endAt');
  if (start !== undefined && end !== undefined && end < start) throw new InvalidScheduleError('endAt must not be before startAt');
  // Fields absent when unset, so a declaration without them renders the text it always did.
  const fields = {
    cron: s.cron as string | undefined,
    tz: s.tz as string | undefined,
    every: s.every as number | undefined,
    payload,
    missed,
    grace,
    attempts: opts.attempts === undefined ? undefined : checkAttempts(opts.attempts),
    backoff: opts.backoff === undefined ? undefined : backoffWire(opts.backoff),
    limit,
    start,
    end,
  };
  return { text: JSON.stringify(fields), stored: { ...fields, nextAfter } };
}

/** Reads a stored spec text back; a text that is not a valid spec is `InvalidScheduleError`. */
export function decodeSchedule(text: string): StoredSchedule {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new InvalidScheduleError('stored schedule spec is not JSON');
  }
  if (typeof o !== 'object' || o === null || typeof o.payload !== 'string') throw new InvalidScheduleError('stored schedule spec has no payload text');
  const missed = o.missed === 'once' ? 'once' : 'skip';
  const grace = typeof o.grace === 'number' ? o.grace : DEFAULT_GRACE_MS;
  return {
    cron: o.cron as string | undefined,
    tz: o.tz as string | undefined,
    every: o.every as number | undefined,
    payload: o.payload,
    missed,
    grace,
    attempts: o.attempts as number | undefined,
    backoff: o.backoff as string | undefined,
    limit: typeof o.limit === 'number' ? o.limit : undefined,
    start: typeof o.start === 'number' ? o.start : undefined,
    end: typeof o.end === 'number' ? o.end : undefined,
    nextAfter: compile(o.cron, o.tz, o.every),
  };
}

/** SHA1 (hex) of a spec text, as `redis.sha1hex` computes it. */
export const specSha = (text: string): string => createHash('sha1').update(text).digest('hex');

/**
 * The first tick of a new schedule created at server time `now`: the first one after now and at
 * or after `start`. A schedule whose window is over gets a tick just after its `end`, which
 * ends it without a job (planTick, tick.lua).
 */
export function firstTick(s: StoredSchedule, now: number): number {
  const from = s.start !== undefined ? Math.max(now, s.start - 1) : now;
  const t = s.every !== undefined && s.start !== undefined && s.start > now ? s.start : s.nextAfter(from);
  if (s.end !== undefined && (t === null || t > s.end)) return Math.min(s.end + 1, MAX_RUN_AT_MS);
  if (t === null || t > MAX_RUN_AT_MS) throw new InvalidScheduleError('the schedule has no tick before 2200-01-01');
  return t;
}

/** What to do with a due tick: write a job (`runAt`, 0 = now) or not, and the next tick (0 = none). */
export interface TickPlan {
  readonly write: boolean;
  readonly runAt: number;
  readonly next: number;
}

/**
 * Plans one due tick `due` at server time `now`. On time (at most `grace` late): a job for that
 * tick (run-at = the tick, so a tick written ahead waits in `scheduled`), next = the tick after
 * it. Later than that (every instance was down): the ticks up to `now − grace` are missed; policy
 * `skip` advances past them without a job, `once` writes one job now for all of them; next = the
 * first tick at or after `now − grace` (which is then on time and runs on its own).
 */
export function planTick(s: StoredSchedule, due: number, now: number): TickPlan {
  const last = Math.min(s.end ?? MAX_RUN_AT_MS, MAX_RUN_AT_MS);
  const clamp = (t: number | null): number => (t === null || t > last ? 0 : t);
  if (due > last) return { write: false, runAt: 0, next: 0 }; // the window is over: the schedule ends
  if (now - due <= s.grace) return { write: true, runAt: due, next: clamp(s.nextAfter(due)) };
  const from = now - s.grace;
  const next = s.every !== undefined ? due + Math.ceil((from - due) / s.every) * s.every : clamp(s.nextAfter(from - 1));
  return { write: s.missed === 'once', runAt: 0, next: next <= due ? clamp(s.nextAfter(due)) : clamp(next) };
}

const PROCESSOR_SCHEDULE_KEYS = keySet<{ name: true; payload: true; cron: true; tz: true; every: true } & { [K in keyof ScheduleOptions]-?: true }>({
  name: true,
  payload: true,
  cron: true,
  tz: true,
  every: true,
  missed: true,
  graceMs: true,
  attempts: true,
  backoff: true,
  limit: true,
  startAt: true,
  endAt: true,
});

/** Splits a `@Processor` schedule declaration into its spec and options, refusing unknown keys. */
export function splitProcessorSchedule(d: ProcessorSchedule, what: string): { spec: ScheduleSpec; opts: ScheduleOptions } {
  refuseUnknownKeys(d, PROCESSOR_SCHEDULE_KEYS, what);
  const { name: _name, payload: _payload, missed, graceMs, attempts, backoff, limit, startAt, endAt, ...spec } = d;
  const opts = Object.fromEntries(Object.entries({ missed, graceMs, attempts, backoff, limit, startAt, endAt }).filter(([, v]) => v !== undefined)) as ScheduleOptions;
  return { spec: spec as ScheduleSpec, opts };
}

/**
 * Validates the `schedules` of a `@Processor` when the class is defined: names (unique),
 * specs, options and payloads; throws the typed error of the first bad one.
 */
export function checkProcessorSchedules(list: unknown, what: string): void {
  if (list === undefined) return;
  if (!Array.isArray(list)) throw new InvalidScheduleError(`${what}: schedules must be an array`);
  const names = new Set<string>();
  for (const [i, d] of (list as ProcessorSchedule[]).entries()) {
    if (typeof d !== 'object' || d === null) throw new InvalidScheduleError(`${what}: each schedule must be an object`);
    refuseUnknownKeys(d, PROCESSOR_SCHEDULE_KEYS, `${what} options`, { path: `schedules[${i}]` });
    assertName(d.name, 'schedule');
    if (names.has(d.name)) throw new InvalidScheduleError(`${what}: schedule "${d.name}" is declared twice`);
    names.add(d.name);
    const { spec, opts } = splitProcessorSchedule(d, `${what} schedule "${d.name}" keys`);
    encodeSchedule(spec, encodePayload(d.payload ?? null, Number.MAX_SAFE_INTEGER), opts);
  }
}
