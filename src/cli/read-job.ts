import { assertBrandedId } from '../core/ids.js';
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
  assertBrandedId(id, 'job');
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
