/*
 * What a handler throws, or sees as its signal's reason, to steer its job: not failures of
 * EchoMQ, so none of them is an `EchoMqError`.
 */

/** The reason `job.signal` aborts with when a cancel was requested while the job ran. */
export class JobCancelledError extends Error {
  constructor(message = 'cancel requested') {
    super(message);
    this.name = 'JobCancelledError';
  }
}

/** The error an attempt fails with when its handler ran past its timeout (also `job.signal`'s reason). */
export class JobTimeoutError extends Error {
  constructor(
    /** The timeout that passed, in ms. */
    readonly timeoutMs: number,
  ) {
    super(`the handler ran past its timeout of ${timeoutMs} ms`);
    this.name = 'JobTimeoutError';
  }
}

/**
 * Not a failure: thrown by `job.waitFor(children)` once the running job has become a waiting
 * parent. It ends the handler's run; the job runs again when its children have finished.
 */
export class WaitingForChildren extends Error {
  constructor(
    /** The ids of the children the job now waits for. */
    readonly children: readonly string[],
  ) {
    super(`waiting for ${children.length} children`);
    this.name = 'WaitingForChildren';
  }
}

/** Throw this from a handler to send the job straight to the morgue, without retries. */
export class FatalJobError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'FatalJobError';
  }
}
