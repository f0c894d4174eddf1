import { assertBrandedId } from '../core/ids.js';
import { describeError } from '../core/reply-errors.js';
import type { QueueAdmin } from '../admin/queue-admin.js';
import type { JobView } from '../queue/job.js';
import { EXIT, exitCodeOf } from './output.js';

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
