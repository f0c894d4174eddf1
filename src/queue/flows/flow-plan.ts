import { encodePayload } from '../../core/codec.js';
import { FlowCycleError, FlowTooDeepError, FlowTooLargeError, InvalidOptionError } from '../../core/errors.js';
import type { OutboxEntry, WireFlowEdge, WireFlowNode } from '../../core/wire/index.js';
import { assertBrandedId } from '../../core/ids.js';
import { assertName } from '../../core/keys.js';
import type { FlowBounds, FlowNode, FlowSpec } from './flow-types.js';
import type { ChildFailurePolicy } from '../job.js';
import { backoffWire, checkAttempts } from '../base-options.js';

/**
 * A validated flow node with its id, encoded for the wire. This is also the JSON a creation entry
 * carries (`c <queue> <json>`), so its field names are short and part of the protocol.
 */
export interface WireTree {
  /** Queue. */
  readonly q: string;
  readonly id: string;
  /** Payload (JSON text). */
  readonly p: string;
  /** Own attempt limit. */
  readonly a?: number;
  /** Own backoff (`f:<ms>` / `e:<ms>`). */
  readonly b?: string;
  /** Policy towards its parent. */
  readonly pol: ChildFailurePolicy;
  /** Key among its siblings. */
  readonly key: string;
  readonly kids: readonly WireTree[];
}

/** What a creation entry's JSON holds: the subtree and the reference of its parent. */
export interface CreateEntry {
  /** `"<queue> <id>"` of the subtree root's parent. */
  readonly up: string;
  readonly tree: WireTree;
}

/** The nodes and edges of one flow-add call on one queue. */
export interface QueuePlan {
  readonly nodes: WireFlowNode[];
  readonly edges: WireFlowEdge[];
  /** Queues that receive creation entries from this call (the relay drains this queue's outbox for them). */
  readonly crosses: number;
}

const KEY_RE = /^[A-Za-z0-9_.-]{1,100}$/;
const POLICIES: readonly ChildFailurePolicy[] = ['fail', 'ignore', 'continue'];

/**
 * Validates a flow spec and encodes it: names, ids, keys, policies, options and payloads are
 * checked, cycles in the object graph refused (EMQ_FLOW_CYCLE), depth and size bounded
 * (EMQ_FLOW_TOO_DEEP / EMQ_FLOW_TOO_LARGE). Ids are minted by `mint` after every check passed.
 */
export function encodeFlow(
  spec: FlowSpec<unknown>,
  bounds: FlowBounds,
  maxBytes: (queue: string) => number,
  mint: () => string,
): WireTree {
  let count = 0;
  const ancestors = new Set<object>();
  const givenIds = new Set<string>();
  type Checked = Omit<WireTree, 'id' | 'kids'> & { id?: string; kids: Checked[] };
  const check = (s: FlowSpec<unknown>, depth: number, key: string): Checked => {
    if (typeof s !== 'object' || s === null) throw new InvalidOptionError('a flow node must be an object');
    if (ancestors.has(s)) throw new FlowCycleError('the flow spec has a cycle: a node is its own ancestor');
    if (depth > bounds.maxDepth) throw new FlowTooDeepError(`the flow is nested deeper than ${bounds.maxDepth} levels`);
    if (++count > bounds.maxNodes) throw new FlowTooLargeError(`the flow has more than ${bounds.maxNodes} nodes`);
    assertName(s.queue, 'queue');
    if (s.id !== undefined) {
      assertBrandedId(s.id, 'job');
      if (givenIds.has(s.id)) throw new InvalidOptionError(`the flow names the id ${s.id} twice`);
      givenIds.add(s.id);
    }
    const pol = s.onFailure ?? 'fail';
    if (!POLICIES.includes(pol)) throw new InvalidOptionError(`onFailure must be one of ${POLICIES.join(', ')}`);
    const kids = s.children ?? [];
    if (!Array.isArray(kids)) throw new InvalidOptionError('children must be an array');
    if (kids.length > bounds.maxChildren) throw new FlowTooLargeError(`a flow node has ${kids.length} children, the bound is ${bounds.maxChildren}`);
    const p = encodePayload(s.payload, maxBytes(s.queue));
    ancestors.add(s);
    const keys = new Set<string>();
    const out: Checked[] = kids.map((k, i) => {
      const kk = (k as FlowSpec<unknown> | null)?.key ?? String(i);
      if (typeof kk !== 'string' || !KEY_RE.test(kk)) throw new InvalidOptionError(`child key ${JSON.stringify(kk)} must be 1..100 of [A-Za-z0-9_.-]`);
      if (keys.has(kk)) throw new InvalidOptionError(`two children share the key ${kk}`);
      keys.add(kk);
      return check(k, depth + 1, kk);
    });
    ancestors.delete(s);
    return {
      q: s.queue,
      id: s.id,
      p,
      a: s.attempts === undefined ? undefined : checkAttempts(s.attempts),
      b: s.backoff === undefined ? undefined : backoffWire(s.backoff),
      pol,
      key,
      kids: out,
    };
  };
  const checked = check(spec, 1, '0');
  const assign = (c: Checked): WireTree => ({ ...c, id: c.id ?? mint(), kids: c.kids.map(assign) });
  return assign(checked);
}

/**
 * The fan-out call (flow-add with the running job) giving the running job `id` of `queue` new children: the plan of a root
 * standing for the job, without the root's own node.
 */
export function planExpand(queue: string, id: string, kids: readonly WireTree[]): QueuePlan {
  const plan = planQueue(queue, [{ tree: { q: queue, id, p: '', pol: 'fail', key: '0', kids }, up: '' }]);
  return { ...plan, nodes: plan.nodes.slice(1) };
}

/** The ids of an encoded flow, shaped like its spec. */
export function flowNodes(t: WireTree, root = true): FlowNode {
  return { id: t.id, queue: t.q, ...(root ? {} : { key: t.key }), children: t.kids.map((k) => flowNodes(k, false)) };
}

/** Every queue an encoded flow touches. */
export function flowQueues(t: WireTree, into = new Set<string>()): Set<string> {
  into.add(t.q);
  for (const k of t.kids) flowQueues(k, into);
  return into;
}

/**
 * The flow-add call on `queue` for subtrees rooted there (each with its parent reference, `""`
 * for a flow's root): the nodes reachable through children in the same queue, an edge per child,
 * and for a child in another queue the creation entry its relay will carry.
 */
export function planQueue(queue: string, roots: readonly { tree: WireTree; up: string }[]): QueuePlan {
  const nodes: WireFlowNode[] = [];
  const edges: WireFlowEdge[] = [];
  let crosses = 0;
  const visit = (t: WireTree, up: string): void => {
    nodes.push({ id: t.id, payload: t.p, parent: up, maxAttempts: t.a, backoff: t.b });
    const ref = `${queue} ${t.id}`;
    for (const k of t.kids) {
      let entry = '';
      if (k.q !== queue) {
        entry = `c ${k.q} ${JSON.stringify({ up: ref, tree: k } satisfies CreateEntry)}`;
        crosses++;
      }
      edges.push({ parentId: t.id, childId: k.id, childQueue: k.q, policy: k.pol, key: k.key, entry });
      if (k.q === queue) visit(k, ref);
    }
  };
  for (const r of roots) visit(r.tree, r.up);
  return { nodes, edges, crosses };
}

/**
 * The creation entries a flow-add call of `plan` wrote (outbox id `c:<child>`, text), from its
 * reply: per node 1 created / 0 skipped; `undefined` for a fan-out that was applied (every node).
 */
export function writtenEntries(plan: QueuePlan, created?: readonly number[]): OutboxEntry[] {
  const made = new Set<string>();
  if (created) plan.nodes.forEach((n, i) => created[i] === 1 && made.add(n.id));
  return plan.edges.filter((e) => e.entry !== '' && (!created || made.has(e.parentId))).map((e) => ({ id: `c:${e.childId}`, text: e.entry }));
}
