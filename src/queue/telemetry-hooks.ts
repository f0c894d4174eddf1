import type { ReapReply, WireCompletion } from '../core/wire/index.js';

/** A completion as the runner hands it to the consumer: the wire fields and the attempt it ends. */
export interface RunnerCompletion extends WireCompletion {
  /** The attempt this completion ends (1 on the first). */
  readonly attempt: number;
}

/** A reap call's reply (see `wire.reap`). */
export type ReapOutcome = ReapReply;

/**
 * What a consumer loop tells about facts it learns anyway (from replies it already reads), for
 * metrics (src/telemetry). Called synchronously; it must not throw and must stay cheap.
 */
export interface ConsumerListener {
  /** A complete call answered: `replies[i]` is 1 when `sent[i]` landed, 0 when its token was refused. */
  completions(sent: readonly RunnerCompletion[], replies: readonly number[]): void;
  /** A reap call by this consumer moved jobs whose lease had expired. */
  reaped(r: ReapOutcome): void;
}

/** A flow parent released by a child's outcome (the relay's deliver answered `released`). */
export interface FlowRelease {
  /** The parent's queue. */
  readonly queue: string;
  readonly parentId: string;
  /** The child whose outcome released the parent. */
  readonly childId: string;
  /** The child's outcome: `done`, `failed` or `cancelled`. */
  readonly outcome: string;
}

/** Told when the flow relay released a parent; `startMs` is when its deliver call started (client clock). */
export type FlowReleaseListener = (release: FlowRelease, startMs: number) => void;
