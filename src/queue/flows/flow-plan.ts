import { encodePayload, type PayloadCodec } from '../../core/codec.js';
import { FlowCycleError, FlowTooDeepError, FlowTooLargeError, InvalidOptionError } from '../../core/errors.js';
import type { OutboxEntry, WireFlowEdge, WireFlowNode } from '../../core/wire/index.js';
import { assertBrandedId } from '../../core/ids.js';
import { assertName } from '../../core/keys.js';
import type { FlowBounds, FlowNode, FlowSpec } from './flow-types.js';
import type { ChildFailurePolicy } from '../job.js';
import { backoffWire, checkAttempts, type BackoffOptions } from '../base-options.js';
import { MAX_BATCH, checkLane, checkPriority, scheduleWire } from '../queue-options.js';
import { keySet } from '../../core/known-keys.js';

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
  /** Delay (ms, > 0) from its creation in its queue, on the server clock; a leaf only. */
  readonly dl?: number;
  /** Run-at (epoch ms); a leaf only. */
  readonly at?: number;
  /** Priority 1..9; a leaf only. */
  readonly pr?: number;
  /** Fair lane; a leaf only. */
  readonly ln?: string;
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

/** A creation entry this process wrote: its text and the content the text encodes (for its self-relay). */
export interface WrittenCreate extends OutboxEntry {
  readonly made: { readonly queue: string; readonly entry: CreateEntry };
}

/** The nodes and edges of one flow-add call on one queue. */
export interface QueuePlan {
  readonly nodes: WireFlowNode[];
  readonly edges: WireFlowEdge[];
  /** Queues that receive creation entries from this call (the relay drains this queue's outbox for them). */
  readonly crosses: number;
  /** Per edge, the creation entry its `entry` text encodes (undefined for a child in the same queue): kept so this process relays it without decoding its text. */
  readonly creates: readonly (CreateEntry | undefined)[];
}

const KEY_RE = /^[A-Za-z0-9_.-]{1,100}$/;
const POLICIES: readonly ChildFailurePolicy[] = ['fail', 'ignore', 'continue', 'release'];
/** The keys a flow node may have: any other is refused (a typo never becomes a silent default). */
const NODE_KEYS = keySet<FlowSpec>({ queue: true, payload: true, id: true, key: true, onFailure: true, attempts: true, backoff: true, delay: true, runAt: true, priority: true, lane: true, children: true });
const BACKOFF_KEYS = keySet<BackoffOptions>({ type: true, delayMs: true });

/** Refuses keys of `o` outside `known`, naming each by its path (`flows[1].children[2].opts`). */
function unknownKeys(o: object, known: ReadonlySet<string>, path: string): void {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new InvalidOptionError(`${path} must be an object`);
  const bad = Object.keys(o).filter((k) => !known.has(k));
  if (bad.length > 0) {
    throw new InvalidOptionError(`unknown flow option ${bad.map((k) => `${path}.${k}`).join(', ')} (known: ${[...known].join(', ')})`);
  }
}

/** `InvalidOptionError` whose message starts with the node's path (`flows[1].children[2]`). */
function atPath<T>(path: string, run: () => T): T {
  try {
    return run();
  } catch (err) {
    if (err instanceof InvalidOptionError && !err.message.startsWith(path)) throw new InvalidOptionError(`${path}: ${err.message}`);
    throw err;
  }
}

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
  root = 'flow',
  givenIds = new Map<string, string>(),
  codecOf: (queue: string) => PayloadCodec = () => 'json',
): WireTree {
  let count = 0;
  const ancestors = new Set<object>();
  type Checked = Omit<WireTree, 'id' | 'kids'> & { id?: string; kids: Checked[] };
  const check = (s: FlowSpec<unknown>, depth: number, key: string, path: string): Checked => {
    if (typeof s !== 'object' || s === null || Array.isArray(s)) throw new InvalidOptionError(`${path}: a flow node must be an object`);
    if (ancestors.has(s)) throw new FlowCycleError(`${path}: the flow spec has a cycle: a node is its own ancestor`);
    if (depth > bounds.maxDepth) throw new FlowTooDeepError(`the flow is nested deeper than ${bounds.maxDepth} levels (at ${path})`);
    if (++count > bounds.maxNodes) throw new FlowTooLargeError(`the flow has more than ${bounds.maxNodes} nodes`);
    unknownKeys(s, NODE_KEYS, path);
    assertName(s.queue, 'queue');
    if (s.id !== undefined) {
      atPath(`${path}.id`, () => assertBrandedId(s.id, 'job'));
      const first = givenIds.get(s.id);
      if (first !== undefined) throw new InvalidOptionError(`${path}.id: the id ${s.id} is named twice (first at ${first})`);
      givenIds.set(s.id, path);
    }
    const pol = s.onFailure ?? 'fail';
    if (!POLICIES.includes(pol)) throw new InvalidOptionError(`${path}.onFailure must be one of ${POLICIES.join(', ')}, got ${JSON.stringify(pol)}`);
    if (s.backoff !== undefined) unknownKeys(s.backoff, BACKOFF_KEYS, `${path}.backoff`);
    const kids = s.children ?? [];
    if (!Array.isArray(kids)) throw new InvalidOptionError(`${path}.children must be an array`);
    if (kids.length > bounds.maxChildren) throw new FlowTooLargeError(`a flow node has ${kids.length} children, the bound is ${bounds.maxChildren}`);
    const when = atPath(path, () => scheduleWire(s));
    const pr = s.priority === undefined ? 0 : atPath(path, () => checkPriority(s.priority));
    const ln = s.lane === undefined ? undefined : atPath(path, () => checkLane(s.lane));
    if (pr > 0 && ln !== undefined) throw new InvalidOptionError(`${path}: give priority or lane, not both`);
    if ((when.delayMs > 0 || when.runAtMs > 0 || pr > 0 || ln !== undefined) && kids.length > 0) {
      throw new InvalidOptionError(`${path}: delay, runAt, priority and lane are for leaves (a parent runs when its children have finished)`);
    }
    const p = encodePayload(s.payload, maxBytes(s.queue), codecOf(s.queue), path === '' ? 'payload' : `${path}.payload`);
    ancestors.add(s);
    const keys = new Set<string>();
    const out: Checked[] = kids.map((k, i) => {
      const at = path === '' ? `children[${i}]` : `${path}.children[${i}]`;
      const kk = (k as FlowSpec<unknown> | null)?.key ?? String(i);
      if (typeof kk !== 'string' || !KEY_RE.test(kk)) throw new InvalidOptionError(`${at}.key ${JSON.stringify(kk)} must be 1..100 of [A-Za-z0-9_.-]`);
      if (keys.has(kk)) throw new InvalidOptionError(`${at}: two children share the key ${kk}`);
      keys.add(kk);
      return check(k, depth + 1, kk, at);
    });
    ancestors.delete(s);
    return {
      q: s.queue,
      id: s.id,
      p,
      a: s.attempts === undefined ? undefined : atPath(path, () => checkAttempts(s.attempts)),
      b: s.backoff === undefined ? undefined : atPath(path, () => backoffWire(s.backoff as BackoffOptions)),
      dl: when.delayMs > 0 ? when.delayMs : undefined,
      at: when.runAtMs > 0 && when.delayMs === 0 ? when.runAtMs : undefined,
      pr: pr > 0 ? pr : undefined,
      ln,
      pol,
      key,
      kids: out,
    };
  };
  const checked = check(spec, 1, '0', root);
  const assign = (c: Checked): WireTree => ({ ...c, id: c.id ?? mint(), kids: c.kids.map(assign) });
  return assign(checked);
}

/** A leaf's run time and lane as flow-add's run-times form takes them (`d:…`/`t:…`, `p:…`/`g:…`), or undefined. */
function runOf(t: WireTree): string | undefined {
  const parts = [t.dl !== undefined ? `d:${t.dl}` : t.at !== undefined ? `t:${t.at}` : '', t.pr !== undefined ? `p:${t.pr}` : t.ln !== undefined ? `g:${t.ln}` : ''].filter((x) => x !== '');
  return parts.length > 0 ? parts.join(' ') : undefined;
}

const str = JSON.stringify;

/**
 * A creation entry's JSON: the text `JSON.stringify` gives, spelt out for the common child (a
 * leaf without options: no object walk over its absent fields), `JSON.stringify` otherwise.
 */
export function createJson(c: CreateEntry): string {
  const t = c.tree;
  if (t.kids.length > 0 || t.a !== undefined || t.b !== undefined || t.dl !== undefined || t.at !== undefined || t.pr !== undefined || t.ln !== undefined) return str(c);
  return `{"up":${str(c.up)},"tree":{"q":${str(t.q)},"id":${str(t.id)},"p":${str(t.p)},"pol":${str(t.pol)},"key":${str(t.key)},"kids":[]}}`;
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
  const creates: (CreateEntry | undefined)[] = [];
  let crosses = 0;
  const visit = (t: WireTree, up: string): void => {
    const run = runOf(t);
    nodes.push({ id: t.id, payload: t.p, parent: up, maxAttempts: t.a, backoff: t.b, run });
    const ref = `${queue} ${t.id}`;
    for (const k of t.kids) {
      let entry = '';
      let create: CreateEntry | undefined;
      if (k.q !== queue) {
        create = { up: ref, tree: k };
        entry = `c ${k.q} ${createJson(create)}`;
        crosses++;
      }
      edges.push({ parentId: t.id, childId: k.id, childQueue: k.q, policy: k.pol, key: k.key, entry });
      creates.push(create);
      if (k.q === queue) visit(k, ref);
    }
  };
  for (const r of roots) visit(r.tree, r.up);
  return { nodes, edges, crosses, creates };
}

/** The plans of several calls' roots as one call's (what `planQueue` of all their roots gives), without encoding anything again. */
export function mergePlans(plans: readonly QueuePlan[]): QueuePlan {
  if (plans.length === 1) return plans[0];
  const nodes: WireFlowNode[] = [];
  const edges: WireFlowEdge[] = [];
  const creates: (CreateEntry | undefined)[] = [];
  let crosses = 0;
  for (const p of plans) {
    for (const x of p.nodes) nodes.push(x);
    for (const x of p.edges) edges.push(x);
    for (const x of p.creates) creates.push(x);
    crosses += p.crosses;
  }
  return { nodes, edges, crosses, creates };
}

/** A plan's size against flow-add's per-call bound: its nodes or its edges, whichever are more. */
export const planSize = (p: QueuePlan): number => Math.max(p.nodes.length, p.edges.length);

/**
 * Consecutive ranges `[from, to)` of `plans` whose merged plan (`mergePlans`) stays within
 * `MAX_BATCH` nodes and edges; a plan alone past it gets a range of its own.
 */
export function planRanges(plans: readonly QueuePlan[]): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i < plans.length; ) {
    let j = i;
    for (let size = 0; j < plans.length; j++) {
      const n = planSize(plans[j]);
      if (j > i && size + n > MAX_BATCH) break;
      size += n;
    }
    out.push([i, j]);
    i = j;
  }
  return out;
}

/**
 * The creation entries a flow-add call of `plan` wrote (outbox id `c:<child>`, text), from its
 * reply: per node 1 created / 0 skipped; `undefined` for a fan-out that was applied (every node).
 */
export function writtenEntries(plan: QueuePlan, created?: readonly number[]): OutboxEntry[] {
  if (plan.crosses === 0) return []; // no edge of the plan carries an entry
  const made = new Set<string>();
  if (created) plan.nodes.forEach((n, i) => created[i] === 1 && made.add(n.id));
  const out: OutboxEntry[] = [];
  plan.edges.forEach((e, i) => {
    if (e.entry === '' || (created && !made.has(e.parentId))) return;
    const create = plan.creates[i];
    // The content rides along (not on the wire): this process's relay of it need not decode the text.
    const entry: OutboxEntry | WrittenCreate = create ? { id: `c:${e.childId}`, text: e.entry, made: { queue: e.childQueue, entry: create } } : { id: `c:${e.childId}`, text: e.entry };
    out.push(entry);
  });
  return out;
}
