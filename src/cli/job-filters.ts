import type { JobSearchOptions, PayloadFieldFilter } from '../admin/job-search.js';
import { CliUsageError, parseCount, parseDuration } from './output.js';

/** The filter flags of `echomq jobs` (docs/admin.md, "The CLI"). */
export interface JobFilterFlags {
  /** `--since`: a duration ago (`1h`) or an ISO instant. */
  readonly since?: string;
  /** `--until`: a duration ago (`10m`) or an ISO instant. */
  readonly until?: string;
  /** `--error`: text the last error contains. */
  readonly error?: string;
  /** `--where`: `path=value` on the payload. */
  readonly where?: string;
  /** `--payload`: text the payload contains. */
  readonly payload?: string;
  /** `--scan`: most index entries examined. */
  readonly scan?: string;
}

/** True when any filter flag was given (the listing is then a bounded filtered one). */
export const hasFilters = (o: JobFilterFlags): boolean => [o.since, o.until, o.error, o.where, o.payload, o.scan].some((v) => v !== undefined);

/** An instant flag: an ISO date/time (`2026-12-07`, `2026-12-07T10:00:00Z`) or a duration ago (`90m`, `1h`, `7d`). */
export function parseInstant(text: string, flag: string, now = Date.now()): Date {
  if (/^\d{4}-\d{2}-\d{2}/.test(text)) {
    const ms = Date.parse(text);
    if (Number.isNaN(ms)) throw new CliUsageError(`${flag}: not a date: ${JSON.stringify(text)}`);
    return new Date(ms);
  }
  try {
    return new Date(now - parseDuration(text));
  } catch {
    throw new CliUsageError(`${flag}: not an ISO instant or a duration ago: ${JSON.stringify(text)} (e.g. 1h, 7d, 2026-12-07T10:00:00Z)`);
  }
}

/** `--where path=value`: the path up to the first `=`, the value after it. */
export function parseWhere(text: string): PayloadFieldFilter {
  const eq = text.indexOf('=');
  if (eq < 1) throw new CliUsageError(`--where takes path=value (e.g. user.id=42), got ${JSON.stringify(text)}`);
  return { path: text.slice(0, eq), equals: text.slice(eq + 1) };
}

/** The search options of the filter flags (the status, limit and cursor added by the caller). */
export function searchOptions(o: JobFilterFlags): Omit<JobSearchOptions, 'status'> {
  return {
    ...(o.since === undefined ? {} : { from: parseInstant(o.since, '--since') }),
    ...(o.until === undefined ? {} : { to: parseInstant(o.until, '--until') }),
    ...(o.error === undefined ? {} : { error: o.error }),
    ...(o.where === undefined ? {} : { field: parseWhere(o.where) }),
    ...(o.payload === undefined ? {} : { payload: o.payload }),
    ...(o.scan === undefined ? {} : { scan: parseCount(o.scan) }),
  };
}
