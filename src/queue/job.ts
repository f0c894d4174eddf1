import type { Json } from '../core/codec.js';

/** The ladder: every job is in exactly one of these states. */
export type JobStatus = 'scheduled' | 'pending' | 'active' | 'done' | 'dead' | 'cancelled' | 'waiting';

/** A claimed job, as a handler sees it. */
export interface Job<T = Json> {
  /** The branded job id (`job…`). */
  readonly id: string;
  /** The queue it was claimed from. */
  readonly queue: string;
  /** The job's name, when it was enqueued with one (`EnqueueOptions.name`, its extras `n`). */
  readonly name?: string;
  /** The decoded payload. */
  readonly payload: T;
  /** 1 on the first attempt. */
  readonly attempt: number;
  /** The fencing token of this claim; present it to fence external side effects. */
  readonly token: string;
  /** The producer's W3C `traceparent`, when the job carries one (its extras `tp`, docs/telemetry.md). */
  readonly traceparent?: string;
  /**
   * Fires when the lease is lost, a cancel was requested (reason `JobCancelledError`), the job's
   * timeout passed (reason `JobTimeoutError`) or the application shuts down before the handler
   * finished.
   */
  readonly signal: AbortSignal;
  /** The last checkpoint an earlier attempt saved with `checkpoint` (undefined on a fresh start). */
  readonly checkpointed?: Json;
  /**
   * Saves `state` (JSON, at most the queue's payload limit) as the job's checkpoint, fenced by the
   * claim token: a retried attempt starts with it as `checkpointed`. Rejects with
   * `StaleTokenError` (EMQ_STALE_TOKEN), writing nothing, when the lease was lost.
   */
  checkpoint(state: Json): Promise<void>;
  /** Records the job's progress (JSON, at most 4096 bytes), fenced like `checkpoint`. */
  progress(value: Json): Promise<void>;
  /** Appends a line (1..4096 bytes) to the job's log (the newest 100 kept), fenced like `checkpoint`. */
  log(line: string): Promise<void>;
}

/**
 * What a child's failure (buried, or cancelled) does to its parent: `fail` buries the parent with
 * the child's error and cancels the siblings still pending or scheduled; `ignore` lets the parent
 * run without it; `continue` lets the parent run with the failure among its children's results;
 * `release` lets the parent run at once, with the failure, without waiting for its other children
 * (BullMQ's `continueParentOnFailure`).
 */
export type ChildFailurePolicy = 'fail' | 'ignore' | 'continue' | 'release';

/** How a child ended, as its parent sees it. */
export type ChildOutcome = 'done' | 'failed' | 'cancelled';

/** A child as `getJob` of its parent shows it. */
export interface FlowChildView {
  /** The child's job id. */
  readonly id: string;
  /** The child's queue. */
  readonly queue: string;
  /** Its key among its siblings. */
  readonly key: string;
  /** Its failure policy. */
  readonly policy: ChildFailurePolicy;
  /** How it ended, once its parent heard. */
  readonly outcome?: ChildOutcome;
  /** Its status now (read from its queue), while its outcome has not arrived. */
  readonly status?: JobStatus;
  /** Its return value, once delivered as done. */
  readonly result?: Json;
  /** Its error text, once delivered as failed or cancelled. */
  readonly error?: string;
}

/** Flow fields of a job view. */
export interface FlowView {
  /** The job's parent, for a flow child. */
  readonly parent?: { readonly queue: string; readonly id: string };
  /** The job's children, for a flow parent (in no particular order). */
  readonly children?: readonly FlowChildView[];
  /** Children whose outcome has not arrived (a parent that still waits). */
  readonly waitingFor?: number;
}

/**
 * A stored payload or result that is not JSON (another runtime wrote it), or an attempt history
 * not in its format: the raw text, and why it did not decode. `code` is always `EMQ_BAD_PAYLOAD`.
 */
export interface UndecodedText {
  /** Always `EMQ_BAD_PAYLOAD`. */
  readonly code: 'EMQ_BAD_PAYLOAD';
  /** Why the text did not decode (the JSON parser's message). */
  readonly message: string;
  /** The stored text, as it is. */
  readonly raw: string;
}

/**
 * How an attempt ended: `failed` (its handler threw or timed out: retry.lua), `lease-expired`
 * (the reaper took it back), `done` (completed), `running` (the attempt running now). Another
 * runtime may record other words: they are shown as they are.
 */
export type AttemptOutcome = 'failed' | 'lease-expired' | 'done' | 'running' | (string & {});

/** One attempt of a job (`JobView.attemptHistory`); a field is absent when it was not recorded. */
export interface AttemptView {
  /** Its number, 1 for the first. */
  readonly attempt: number;
  /** When it was claimed (server clock). */
  readonly startedAt?: Date;
  /** When it ended (server clock); absent while it runs. */
  readonly endedAt?: Date;
  /** `endedAt - startedAt` in ms, when both are known. */
  readonly durationMs?: number;
  /** Who ran it (the TypeScript runtime: `<host name>:<pid>`). */
  readonly worker?: string;
  /** How it ended. */
  readonly outcome: AttemptOutcome;
  /** Its error text (at most 1024 bytes), for an attempt that did not complete. */
  readonly error?: string;
  /** The error's stack (at most 2048 bytes), when the runtime sent it. */
  readonly stack?: string;
}

/**
 * A job read back from Valkey (`QueueService.getJob`). A payload or result that is not JSON is not
 * thrown: the field is `undefined` and `payloadError` / `resultError` carries the raw text.
 */
export interface JobView<T = Json, R = Json> extends FlowView {
  /** The branded job id. */
  readonly id: string;
  /** The queue holding it. */
  readonly queue: string;
  /** Where it is on the ladder now. */
  readonly status: JobStatus;
  /** The job's name, when it was enqueued with one (`EnqueueOptions.name`). */
  readonly name?: string;
  /** The job's business id, when it was enqueued with one (`EnqueueOptions.id: 'order-42'`). */
  readonly ref?: string;
  /** Attempts started so far. */
  readonly attempts: number;
  /** The job's own attempt limit, when it set one. */
  readonly maxAttempts?: number;
  /** The decoded payload (`undefined` only when `payloadError` is set). */
  readonly payload: T;
  /** Set when the stored payload is not JSON. */
  readonly payloadError?: UndecodedText;
  /** The handler's result, once done (`undefined` when it returned nothing, or see `resultError`). */
  readonly result?: R;
  /** Set when the stored result is not JSON. */
  readonly resultError?: UndecodedText;
  /** The last error, when an attempt failed. */
  readonly error?: string;
  /**
   * When the id was minted (the snowflake's instant, on the minting producer's clock): the enqueue
   * time unless the id was minted earlier.
   */
  readonly createdAt: Date;
  /** When it became done, dead or cancelled (server clock). */
  readonly finishedAt?: Date;
  /** When its latest attempt started (server clock; recorded by claims of the TypeScript runtime). */
  readonly startedAt?: Date;
  /**
   * Its attempts, oldest first: the newest 10 that did not complete, then the running or completed
   * one (docs/queue.md, "Attempt history").
   */
  readonly attemptHistory: readonly AttemptView[];
  /** Set when the stored history is not in its format (written by hand): its raw text; the records before the fault are kept. */
  readonly attemptHistoryError?: UndecodedText;
  /** True when a cancel was requested while the job was active. */
  readonly cancelRequested: boolean;
  /** The last progress a handler recorded (`job.progress`). */
  readonly progress?: Json;
  /** The last checkpoint a handler saved (`job.checkpoint`). */
  readonly checkpoint?: Json;
  /** The job's log lines (`job.log`), oldest first (the newest 100 are kept). */
  readonly logs: readonly string[];
}

/** Jobs per status (done and cancelled count the retained rows; `waiting`: flow parents whose children are still out). */
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
  | 'cancel-requested'
  | 'waiting';

/** One lifecycle event: every job one script call moved the same way. */
export interface QueueEvent {
  /** The queue the transition happened in. */
  readonly queue: string;
  /** The transition. */
  readonly kind: QueueEventKind;
  /** The jobs the call moved this way. */
  readonly ids: readonly string[];
  /** The server's clock at the transition. */
  readonly at: Date;
}
