import type { QueueKeys } from '../keys.js';
import { PROTOCOL_VERSION, runScript, type ScriptClient } from '../scripts.js';

/** One node of a flow-add call (docs/flows.md): a job of the call's queue, encoded for the wire. */
export interface WireFlowNode {
  readonly id: string;
  readonly payload: string;
  /** `""`, or `"<queue> <id>"` of its parent. */
  readonly parent: string;
  readonly maxAttempts?: number;
  readonly backoff?: string;
  /**
   * A leaf's run time and lane, space-separated: `d:<ms>` (a delay from its creation, server
   * clock) or `t:<epoch ms>`; `p:<1..9>` (a priority) or `g:<lane>`. Absent = ready now, level 0.
   */
  readonly run?: string;
}

/** flow-add's optional tail: the lease, then (the run-times form, when a node has a run time) one run time per node. */
function tail(args: (string | number)[], nodes: readonly WireFlowNode[], selfLeaseMs?: number): void {
  if (nodes.some((n) => n.run !== undefined)) {
    args.push(selfLeaseMs ?? '');
    for (const n of nodes) args.push(n.run ?? '');
  } else if (selfLeaseMs !== undefined) args.push(selfLeaseMs);
}

/** One child edge of a flow-add call. */
export interface WireFlowEdge {
  readonly parentId: string;
  readonly childId: string;
  readonly childQueue: string;
  readonly policy: 'fail' | 'ignore' | 'continue' | 'release';
  readonly key: string;
  /** The creation entry ("c <queue> <subtree JSON>") of a child in another queue, else `""`. */
  readonly entry: string;
}

/** What a delivery did (flow-deliver.lua). */
export type DeliverOutcome = 'missing' | 'repeat' | 'recorded' | 'released' | 'buried';

/** One child's outcome bound for its parent (a flow-deliver delivery). */
export interface Delivery {
  readonly parentId: string;
  readonly childId: string;
  readonly outcome: 'done' | 'failed' | 'cancelled';
  readonly text: string;
}

/** One outbox entry as outbox-take.lua returns it. */
export interface OutboxEntry {
  readonly id: string;
  readonly text: string;
}

const DELIVERED: Record<number, DeliverOutcome> = { [-1]: 'missing', 0: 'repeat', 1: 'recorded', 2: 'released', 3: 'buried' };

/** Typed wrappers of the flow scripts; every key array is built here from the key grammar. */
export const flowWire = {
  /**
   * Creates the nodes of one queue; per node 1 created / 0 skipped (its tree existed). With
   * `selfLeaseMs`, the creation entries written are leased to the caller, who relays them itself
   * (no outbox signal; flow-add.lua's self-relay lease).
   */
  async add(
    c: ScriptClient,
    k: QueueKeys,
    maxBytes: number,
    outboxBound: number,
    nodes: readonly WireFlowNode[],
    edges: readonly WireFlowEdge[],
    selfLeaseMs?: number,
  ): Promise<number[]> {
    const args: (string | number)[] = [PROTOCOL_VERSION, maxBytes, outboxBound, nodes.length, edges.length];
    for (const n of nodes) args.push(n.id, n.payload, n.parent, n.maxAttempts ?? '', n.backoff ?? '');
    for (const e of edges) args.push(e.parentId, e.childId, e.childQueue, e.policy, e.key, e.entry);
    tail(args, nodes, selfLeaseMs);
    const keys = [k.meta, k.pending, k.wake, k.data, k.opts, k.jobPrefix, k.events, k.outbox, k.outdue];
    return (await runScript(c, 'flow-add', keys, args)) as number[];
  },

  /**
   * Gives the running job `job` (fenced by its token) new children: it becomes a waiting parent
   * (`selfLeaseMs` as for `add`). Resolves false when refused (the job is no longer active under that token).
   */
  async expand(
    c: ScriptClient,
    k: QueueKeys,
    maxBytes: number,
    outboxBound: number,
    job: { readonly id: string; readonly token: string },
    nodes: readonly WireFlowNode[],
    edges: readonly WireFlowEdge[],
    selfLeaseMs?: number,
  ): Promise<boolean> {
    const args: (string | number)[] = [PROTOCOL_VERSION, maxBytes, outboxBound, nodes.length, edges.length, job.id, job.token];
    for (const n of nodes) args.push(n.id, n.payload, n.parent, n.maxAttempts ?? '', n.backoff ?? '');
    for (const e of edges) args.push(e.parentId, e.childId, e.childQueue, e.policy, e.key, e.entry);
    tail(args, nodes, selfLeaseMs);
    const keys = [k.meta, k.pending, k.wake, k.data, k.opts, k.jobPrefix, k.events, k.outbox, k.outdue, k.active, k.job(job.id)];
    return ((await runScript(c, 'flow-add', keys, args)) as number) === 1; // flow-add's fan-out mode
  },

  /** Delivers one child's outcome to its parent (on the parent's queue). */
  async deliver(c: ScriptClient, k: QueueKeys, d: Delivery, deadCap: number): Promise<DeliverOutcome> {
    const [one] = await flowWire.deliverMany(c, k, [d], deadCap);
    return one;
  },

  /**
   * Delivers children's outcomes to parents of one queue in one call (1..1000), applied in order
   * as if one call each; resolves to what each delivery did.
   */
  async deliverMany(c: ScriptClient, k: QueueKeys, ds: readonly Delivery[], deadCap: number): Promise<DeliverOutcome[]> {
    const [first, ...rest] = ds;
    const args: (string | number)[] = [PROTOCOL_VERSION, first.parentId, first.childId, first.outcome, first.text, deadCap];
    for (const d of rest) args.push(d.parentId, d.childId, d.outcome, d.text);
    const keys = [k.meta, k.pending, k.wake, k.dead, k.data, k.jobPrefix, k.job(first.parentId), k.events, k.outbox, k.outdue];
    const r = (await runScript(c, 'flow-deliver', keys, args)) as number | number[];
    return (Array.isArray(r) ? r : [r]).map((x) => DELIVERED[x] ?? 'missing');
  },

  /**
   * Makes parent `parentId` of this queue stop waiting for child `childId` (flow-deliver's outcome
   * `removed`): `missing` (no such parent, or not its child), `repeat` (the child's outcome
   * arrived already), `recorded` (forgotten), `released` (forgotten, and the parent released).
   */
  async detach(c: ScriptClient, k: QueueKeys, parentId: string, childId: string, deadCap: number): Promise<DeliverOutcome> {
    const args = [PROTOCOL_VERSION, parentId, childId, 'removed', '', deadCap];
    const keys = [k.meta, k.pending, k.wake, k.dead, k.data, k.jobPrefix, k.job(parentId), k.events, k.outbox, k.outdue];
    return DELIVERED[(await runScript(c, 'flow-deliver', keys, args)) as number] ?? 'missing';
  },

  /**
   * Makes root parent `parentId`, buried by child `childId`'s failure, wait for that child again
   * (flow-deliver's outcome `resume`): 4 resumed; -2 buried by it but not resumable (a sibling
   * did not end done, or the parent has a parent); -1 not buried by it.
   */
  async resume(c: ScriptClient, k: QueueKeys, parentId: string, childId: string, deadCap: number): Promise<number> {
    const args = [PROTOCOL_VERSION, parentId, childId, 'resume', '', deadCap];
    const keys = [k.meta, k.pending, k.wake, k.dead, k.data, k.jobPrefix, k.job(parentId), k.events, k.outbox, k.outdue];
    return (await runScript(c, 'flow-deliver', keys, args)) as number;
  },

  /** Takes up to `n` due outbox entries under a relay lease of `leaseMs`. */
  async take(c: ScriptClient, k: QueueKeys, n: number, leaseMs: number): Promise<OutboxEntry[]> {
    const r = (await runScript(c, 'outbox-take', [k.meta, k.outbox, k.outdue], [PROTOCOL_VERSION, n, leaseMs])) as string[];
    const out: OutboxEntry[] = [];
    for (let i = 0; i < r.length; i += 2) out.push({ id: r[i], text: r[i + 1] });
    return out;
  },

  /** Removes relayed entries (1..1000 ids); resolves to how many were still there. */
  async ack(c: ScriptClient, k: QueueKeys, ids: readonly string[]): Promise<number> {
    return (await runScript(c, 'outbox-ack', [k.meta, k.outbox, k.outdue], [PROTOCOL_VERSION, ids.length, ...ids])) as number;
  },
};
