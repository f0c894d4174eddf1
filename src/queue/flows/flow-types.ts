import type { Json } from '../../core/codec.js';
import type { ChildFailurePolicy, ChildOutcome, Job } from '../job.js';
import type { BackoffOptions } from '../base-options.js';

/** One node of a flow: a job, and the children it waits for (docs/flows.md). */
export interface FlowSpec<T = Json> {
  /** The queue the node's job goes to. */
  readonly queue: string;
  /** The job's payload (JSON). */
  readonly payload: T;
  /**
   * A caller-chosen job id (`mintId()`). Creating the same flow again is a replay (nothing written);
   * an id held by any other job is refused with `EMQ_ID_COLLISION`.
   */
  readonly id?: string;
  /** Its key among its siblings (default: its position, "0", "1", …); 1..100 of [A-Za-z0-9_.-]. */
  readonly key?: string;
  /** What its failure does to its parent. Default `fail`. */
  readonly onFailure?: ChildFailurePolicy;
  /** Its own attempt limit (1..1000). */
  readonly attempts?: number;
  /** Its own backoff. */
  readonly backoff?: BackoffOptions;
  /**
   * A leaf only: run no sooner than this many ms after it is created in its queue (0..ten years,
   * on the server's clock), as the enqueue option. A child in another queue is created by the
   * relay, normally within ms of `flow()` (up to the relay lease later after a crash).
   */
  readonly delay?: number;
  /** A leaf only: run no sooner than this instant (a Date or epoch ms, up to 2200-01-01), as the enqueue option. */
  readonly runAt?: Date | number;
  /** A leaf only: its priority, 0..9 (higher is claimed first), as the enqueue option. Not with `lane`. */
  readonly priority?: number;
  /** A leaf only: its fair lane (1..100 of `A-Z a-z 0-9 _ . -`), as the enqueue option. Not with `priority`. */
  readonly lane?: string;
  /** Children it waits for (in any queue); a node with children starts `waiting`. */
  readonly children?: readonly FlowSpec[];
}

/** The ids of a created flow, shaped like its spec. */
export interface FlowNode {
  /** The job id of this node. */
  readonly id: string;
  /** Its queue. */
  readonly queue: string;
  /** Its key among its siblings (absent for the root). */
  readonly key?: string;
  /** Its children, in spec order. */
  readonly children: readonly FlowNode[];
}

/** Bounds of one flow, checked before anything is written. */
export interface FlowBounds {
  /** Deepest nesting (the root is depth 1). Default 10. */
  readonly maxDepth: number;
  /** Most children of one node. Default 1000. */
  readonly maxChildren: number;
  /** Most nodes in one flow. Default 1000. */
  readonly maxNodes: number;
}

/** The default bounds of a flow. */
export const DEFAULT_FLOW_BOUNDS: FlowBounds = { maxDepth: 10, maxChildren: 1000, maxNodes: 1000 };

/** One child's result, handed to its parent's handler. */
export interface ChildResult<R = Json> {
  /** The child's job id. */
  readonly id: string;
  /** The child's queue. */
  readonly queue: string;
  /** Its key among its siblings. */
  readonly key: string;
  /** Its failure policy. */
  readonly policy: ChildFailurePolicy;
  /** How it ended. */
  readonly outcome: ChildOutcome;
  /** The child's return value (done). */
  readonly result?: R;
  /** The child's error text (failed or cancelled). */
  readonly error?: string;
}

/** A parent's children results: in spec order, by child id and by key. */
export interface FlowChildren<R = Json> {
  /** Every child result, in spec order. */
  readonly list: readonly ChildResult<R>[];
  /** The same results by child job id. */
  readonly byId: Readonly<Record<string, ChildResult<R>>>;
  /** The same results by child key. */
  readonly byKey: Readonly<Record<string, ChildResult<R>>>;
}

/** The job a `@Flow` handler receives: a claimed job plus its children's results. */
export interface FlowJob<T = Json, R = Json> extends Job<T> {
  /** Results of the children (under `ignore`, a failed child is left out). */
  readonly children: FlowChildren<R>;
  /**
   * Fans out from the running job: gives it these children and ends this run (`return
   * job.waitFor([...])`). The job waits (`waiting`) until they have all finished, then runs again
   * with their results in `children`. Rejects with `WaitingForChildren` once that is recorded.
   */
  waitFor(children: readonly FlowSpec[]): Promise<never>;
}
