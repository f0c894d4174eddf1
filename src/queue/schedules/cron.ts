import { Cron } from 'croner';
import { InvalidScheduleError } from '../../core/errors.js';

/** Longest cron expression accepted (characters). */
export const MAX_CRON_LENGTH = 200;
const HOUR = 3_600_000;

const formats = new Map<string, Intl.DateTimeFormat>();
/** The formatter that spells an instant's offset in `tz`; throws `InvalidScheduleError` for an unknown zone. */
function offsetFormat(tz: string): Intl.DateTimeFormat {
  let f = formats.get(tz);
  if (!f) {
    try {
      f = new Intl.DateTimeFormat('en-US', { timeZone: tz, timeZoneName: 'longOffset' });
    } catch {
      throw new InvalidScheduleError(`unknown time zone ${JSON.stringify(tz.slice(0, 60))} (use an IANA name such as "Europe/Berlin")`);
    }
    if (formats.size > 1000) formats.clear();
    formats.set(tz, f);
  }
  return f;
}

/** The offset of `tz` from UTC at instant `t`, in ms (Europe/Berlin in summer: +7,200,000). */
export function tzOffsetMs(tz: string, t: number): number {
  const name = offsetFormat(tz).formatToParts(t).find((p) => p.type === 'timeZoneName')?.value ?? 'GMT';
  const m = /^GMT([+-])(\d\d):(\d\d)(?::(\d\d))?$/.exec(name);
  if (!m) return 0; // "GMT": UTC itself
  const ms = ((Number(m[2]) * 60 + Number(m[3])) * 60 + Number(m[4] ?? 0)) * 1000;
  return m[1] === '-' ? -ms : ms;
}

/**
 * The instant a wall-clock time `wall` (local time in `tz`, written as if it were UTC ms) fires
 * at: the instant itself when it exists once; its first occurrence when a fall-back repeats it;
 * the end of the gap when a spring-forward skipped it (so a skipped time still fires, once).
 */
export function wallToInstant(tz: string, wall: number): number {
  const before = tzOffsetMs(tz, wall - 14 * HOUR);
  const after = tzOffsetMs(tz, wall + 14 * HOUR);
  const hits = [...new Set([before, after])].map((o) => wall - o).filter((t) => tzOffsetMs(tz, t) === wall - t);
  if (hits.length > 0) return Math.min(...hits);
  // In a gap: the transition lies in (wall - after, wall - before]; find it to the ms.
  let lo = wall - after;
  let hi = wall - before;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (tzOffsetMs(tz, mid) === before) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** The hour field of an expression (5 fields: the second; 6 or 7: the third), or `*` for `@hourly`. */
function hourField(expr: string): string {
  if (expr.startsWith('@')) return expr === '@hourly' ? '*' : '0';
  const f = expr.trim().split(/\s+/);
  return f.length === 5 ? f[1] : (f[2] ?? '0');
}

/** A compiled cron expression: the first tick strictly after an instant, or null when there is none. */
export type NextTick = (after: number) => number | null;

/**
 * Compiles `expr` (croner syntax: 5 fields, or 6 with seconds first) in time zone `tz` (IANA,
 * default UTC). Throws `InvalidScheduleError` (EMQ_BAD_SCHEDULE) for a malformed expression, an
 * unknown zone, or an expression that never fires.
 *
 * DST rule: an expression whose hour field is `*` (or `*​/1`, `@hourly`) runs every hour, so it
 * follows real time (every real hour fires, both of a fall-back's repeated hour, none is
 * invented in a spring-forward's gap). Any other hour field — a fixed hour, a list, a range or a
 * step such as `*​/2` — names wall-clock hours of the zone, and each wall-clock time fires exactly
 * once: a time a spring-forward skips fires at the end of the gap, a time a fall-back repeats
 * fires at its first occurrence only. So `0 *​/2 * * *` fires at the even wall-clock hours
 * (00:00, 02:00, …; real gaps of 2, 2, 2, 1, 2 hours through a spring-forward whose gap holds
 * 02:00, 2, 3, 2 hours through the fall-back that repeats 02:00), never twice at one wall time.
 */
export function compileCron(expr: unknown, tz?: unknown): NextTick {
  if (typeof expr !== 'string' || expr.trim().length === 0 || expr.length > MAX_CRON_LENGTH) {
    throw new InvalidScheduleError(`cron must be a non-empty expression of at most ${MAX_CRON_LENGTH} characters`);
  }
  if (tz !== undefined && (typeof tz !== 'string' || tz.length === 0 || tz.length > 64)) {
    throw new InvalidScheduleError('tz must be an IANA time zone name (1..64 characters)');
  }
  const zone = tz ?? 'UTC';
  tzOffsetMs(zone, Date.now()); // refuses an unknown zone
  // Every hour (`*`, `*/1`) is real time; a step or list of hours (`*/2`, `0,12`) is wall-clock.
  const realTime = zone === 'UTC' || /^\*(\/1)?$/.test(hourField(expr));
  let cron: Cron;
  try {
    cron = new Cron(expr, { paused: true, ...(realTime ? { timezone: zone } : { timezone: 'UTC' }) });
  } catch (err) {
    throw new InvalidScheduleError(`bad cron expression ${JSON.stringify(expr.slice(0, 60))}: ${(err as Error).message}`);
  }
  const next: NextTick = realTime
    ? (after) => cron.nextRun(new Date(after))?.getTime() ?? null
    : (after) => {
        // Walk the wall-clock sequence from `after`'s own wall time (the mapping is monotone and
        // maps that wall time to `after` or earlier), keep the first instant after `after`; only
        // the repeated hour of a fall-back has wall times to step over.
        let wall = after + tzOffsetMs(zone, after);
        for (let i = 0; i < 10_000; i++) {
          const w = cron.nextRun(new Date(wall))?.getTime();
          if (w === undefined) return null;
          const t = wallToInstant(zone, w);
          if (t > after) return t;
          wall = w;
        }
        return null;
      };
  if (next(Date.now()) === null) throw new InvalidScheduleError(`cron expression ${JSON.stringify(expr.slice(0, 60))} never fires`);
  return next;
}
