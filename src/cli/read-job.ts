import { assertJobIdOrRef } from '../queue/business-ids.js';
import { describeError } from '../core/reply-errors.js';
import type { QueueAdmin } from '../admin/queue-admin.js';
import type { JobView } from '../queue/job.js';
import { EXIT, exitCodeOf, type Output } from './output.js';

/** A job whose data cannot be read (a row of another type, …): its id and why. */
export interface UnreadableJob {
  /** The job id asked for. */
  readonly id: string;
  /** Its queue. */
  readonly queue: string;
  /** Always `unreadable`. */
  readonly status: 'unreadable';
  /** Why, as `EMQ_<CODE> message`. */
  readonly unreadable: string;
}

/**
 * Reads one job for `echomq job`: bad input, an unknown queue or job and an outage fail as
 * always (exit 1, 2, 3); a job whose data cannot be read (a key of another type, written by hand)
 * is shown as `unreadable` with why, never a stack or a failed command.
 */
export async function readJob(queues: QueueAdmin, queue: string, id: string): Promise<JobView | UnreadableJob> {
  assertJobIdOrRef(id); // a wire id or a business id
  await queues.assertKnown(queue);
  try {
    return await queues.job(queue, id);
  } catch (err) {
    if (exitCodeOf(err) !== EXIT.failed) throw err;
    return { id, queue, status: 'unreadable', unreadable: describeError(err) };
  }
}

/** A read's value, or why the data could not be read (`EMQ_<CODE> message`). */
export type CliRead<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly unreadable: string };

/**
 * Runs the read of a single-target command (`jobs`, `groups`, `dead-letters`, `retention`): bad
 * input, not found and an outage still fail (exit 1, 2, 3); a failure of the data itself (a key
 * of another type, written by hand: exit 5 otherwise) resolves to its text, to be shown as such.
 */
export async function readOr<T>(read: Promise<T>): Promise<CliRead<T>> {
  try {
    return { ok: true, value: await read };
  } catch (err) {
    if (exitCodeOf(err) !== EXIT.failed) throw err;
    return { ok: false, unreadable: describeError(err) };
  }
}

/** Shows what could not be read: a one-row table (`{ unreadable }` with `--json`) and one warning line on stderr; exit 0. */
export function showUnreadable(out: Output, what: string, unreadable: string): void {
  out.table([what], [[`unreadable: ${unreadable}`]], { unreadable });
  process.stderr.write(`echomq: warning: ${what} could not be read: ${unreadable}\n`);
}

/** The longest raw text of an unreadable attempt history shown (the rest is counted). */
const SHOWN_RAW = 200;

/**
 * The lines `echomq job` prints after the job's fields: each attempt (number, outcome, start,
 * duration, worker), its error and its stack indented below it; an unreadable stored history as
 * such. The caller escapes control characters (each line on its own).
 */
export function attemptLines(j: JobView): string[] {
  const lines: string[] = [];
  if (j.attemptHistory.length > 0) lines.push('', 'attempts (oldest first):');
  for (const a of j.attemptHistory) {
    const head = [`  #${a.attempt} ${a.outcome}`];
    head.push(a.startedAt ? `started ${isoOf(a.startedAt)}` : 'started unknown');
    if (a.durationMs !== undefined) head.push(`took ${a.durationMs} ms`);
    if (a.worker) head.push(`worker ${a.worker}`);
    lines.push(head.join('  '));
    if (a.error) lines.push(`      error: ${a.error}`);
    if (a.stack) lines.push('      stack:', ...a.stack.split('\n').map((l) => `        ${l}`));
  }
  const bad = j.attemptHistoryError;
  if (bad) {
    const more = bad.raw.length > SHOWN_RAW ? ` (${bad.raw.length - SHOWN_RAW} more characters)` : '';
    lines.push('', `attempt history unreadable: ${bad.message}: ${bad.raw.slice(0, SHOWN_RAW)}${more}`);
  }
  return lines;
}

/** A date as ISO text; a planted instant out of range as `invalid date` (never a throw). */
const isoOf = (d: Date): string => (Number.isNaN(d.getTime()) ? 'invalid date' : d.toISOString());
