import type { Json } from '../protocol/codec.js';

/** The ladder: every job is in exactly one of these states. */
export type JobStatus = 'scheduled' | 'pending' | 'active' | 'done' | 'dead' | 'cancelled';

/** A claimed job, as a handler sees it. */
export interface Job<T = Json> {
  readonly id: string;
  readonly queue: string;
  readonly payload: T;
  /** 1 on the first attempt. */
  readonly attempt: number;
  /** The fencing token of this claim; present it to fence external side effects. */
  readonly token: string;
  /** Fires when the lease is lost or the application shuts down before the handler finished. */
  readonly signal: AbortSignal;
}

/** A job row read back from Valkey. */
export interface JobView<T = Json, R = Json> {
  readonly id: string;
  readonly queue: string;
  readonly status: JobStatus;
  /** Attempts started so far. */
  readonly attempts: number;
  /** The job's own attempt limit, when it set one. */
  readonly maxAttempts?: number;
  readonly payload: T;
  readonly result?: R;
  /** The last error, when an attempt failed. */
  readonly error?: string;
  /** When the id was minted (the snowflake's instant): the enqueue time unless the id was minted earlier. */
  readonly createdAt: Date;
  readonly finishedAt?: Date;
  /** True when a cancel was requested while the job was active. */
  readonly cancelRequested: boolean;
}

/** Jobs per status (done and cancelled count the retained rows). */
export type JobCounts = Record<JobStatus, number>;

/** A handler of a queue. */
export type JobHandler<T = Json, R = unknown> = (job: Job<T>) => Promise<R> | R;

/** What a lifecycle event reports. */
export type QueueEventKind =
  | 'enqueued'
  | 'scheduled'
  | 'claimed'
  | 'completed'
  | 'retried'
  | 'buried'
  | 'requeued'
  | 'released'
  | 'cancelled'
  | 'cancel-requested';

/** One lifecycle event: every job one script call moved the same way. */
export interface QueueEvent {
  readonly queue: string;
  readonly kind: QueueEventKind;
  readonly ids: readonly string[];
  /** The server's clock at the transition. */
  readonly at: Date;
}
