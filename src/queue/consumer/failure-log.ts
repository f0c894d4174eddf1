import type { EchoMqConnection } from '../../core/connection/index.js';
import { describeError } from '../../core/reply-errors.js';
import { escapeControls } from '../../core/control-chars.js';
import { queueKeys } from '../../core/keys.js';
import type { ReapedJob } from '../../core/wire/index.js';

/** One failed attempt of a job, reported once the retry script recorded what follows. */
export interface JobFailure {
  readonly queue: string;
  readonly id: string;
  /** The attempt that failed (1 on the first). */
  readonly attempt: number;
  /** What followed: scheduled again (`retry`), or moved to the morgue (`dead`). */
  readonly outcome: 'retry' | 'dead';
  /** Server clock: when the next attempt is due (`retry`), or when the job was buried (`dead`). */
  readonly at: Date;
  /** The error text stored on the job (see `errorText`). */
  readonly error: string;
  /** True when the handler threw `FatalJobError` (no retries). */
  readonly fatal: boolean;
  /** The consumer's attempt limit, which applies unless the job was enqueued with its own. */
  readonly defaultMaxAttempts: number;
}

/** What a consumer calls after each failed attempt (see `ConsumerConfig.onFailure`). */
export type FailureListener = (failure: JobFailure) => void;

/** Where failure lines go: a Nest `Logger` fits. */
export interface FailureLogger {
  warn(message: string): void;
  error(message: string): void;
}

/** The reply of the retry script, as `wire.retry` resolves it. */
interface RetryReply {
  readonly outcome: 'stale' | 'retry' | 'dead' | 'cancelled';
  readonly at?: number;
}

/**
 * Reports a retry's outcome to `listener` when it was a failure transition (scheduled again, or
 * buried); a refused (stale) retry or a cancellation is no failure of the job. A listener that
 * throws is ignored: logging never breaks the consumer loop.
 */
export function reportFailure(
  listener: FailureListener | undefined,
  job: { readonly queue: string; readonly id: string; readonly attempt: number; readonly defaultMaxAttempts: number },
  error: string,
  fatal: boolean,
  reply: RetryReply,
): void {
  if (!listener || (reply.outcome !== 'retry' && reply.outcome !== 'dead')) return;
  try {
    listener({ ...job, outcome: reply.outcome, at: new Date(reply.at ?? Date.now()), error, fatal });
  } catch {
    /* a listener's failure is its own */
  }
}

const MAX_LOGGED_ERROR = 1000;

/**
 * The log line of one failure: `job <id> of "<queue>" failed attempt 2/5; retry at <ISO time>:
 * <error>` or `job <id> of "<queue>" is dead after attempt 5/5 (buried at <ISO time>): <error>`
 * (`, fatal error` when `FatalJobError` ended it). The error is cut to 1000 characters and its
 * control characters escaped (`\n`, `\x1b`): one failure is one line, whatever the handler threw.
 */
export function describeFailure(f: JobFailure, maxAttempts: number): string {
  const err = escapeControls(f.error.length > MAX_LOGGED_ERROR ? `${f.error.slice(0, MAX_LOGGED_ERROR)}…` : f.error);
  const head = `job ${f.id} of "${f.queue}"`;
  if (f.outcome === 'retry') return `${head} failed attempt ${f.attempt}/${maxAttempts}; retry at ${f.at.toISOString()}: ${err}`;
  return `${head} is dead after attempt ${f.attempt}/${maxAttempts} (buried at ${f.at.toISOString()}${f.fatal ? ', fatal error' : ''}): ${err}`;
}

/**
 * A failure listener that logs each transition once: a failed attempt with a retry scheduled as
 * a warning, a buried (dead) job as an error, with queue, id, attempt/maxAttempts and the error.
 * The job's own attempt limit (set at enqueue) is read from its row (one `HGET`, on failures
 * only); when that read fails the consumer's default is shown.
 */
export function failureLog(conn: EchoMqConnection, logger: FailureLogger): FailureListener {
  return (f) => {
    void conn.client
      .hget(queueKeys(f.queue).job(f.id), 'max')
      .then(
        (own) => (own ? Number(own) : f.defaultMaxAttempts),
        () => f.defaultMaxAttempts,
      )
      .then((max) => {
        const line = describeFailure(f, max);
        if (f.outcome === 'retry') logger.warn(line);
        else logger.error(line);
      })
      .catch((err: unknown) => logger.warn(`logging a failure of job ${f.id}: ${describeError(err)}`));
  };
}

const REAPED: Record<ReapedJob['outcome'], string> = {
  requeued: 'requeued (pending again)',
  buried: 'buried (dead: it was the last attempt)',
  cancelled: 'cancelled (a cancel was requested)',
};

/**
 * The log line of one reaped job: `job <id> of "<queue>" lost its lease on attempt 2 (error:
 * lease expired); requeued (pending again)`; a burial is logged as an error, the rest as warnings.
 */
export function describeReap(queue: string, j: ReapedJob): string {
  return `job ${j.id} of "${queue}" lost its lease on attempt ${j.attempt} (error: lease expired); ${REAPED[j.outcome]}`;
}
