import type { PayloadCodec } from '../../core/codec.js';
import { decodePayload, type Json } from '../../core/codec.js';
import { announce } from '../../core/announce.js';
import type { EchoMqConnection } from '../../core/connection/index.js';
import { BatchTooLargeError, IdCollisionError, InvalidOptionError, JobStateError, StaleTokenError } from '../../core/errors.js';
import { WaitingForChildren } from '../job-signals.js';
import { adminWire, flowWire } from '../../core/wire/index.js';
import { queueKeys } from '../../core/keys.js';
import { wire } from '../../core/wire/index.js';
import { FlowRelay, type FlowRelayOptions } from './flow-relay.js';
import { encodeFlow, flowNodes, flowQueues, mergePlans, planExpand, planQueue, planRanges, planSize, writtenEntries, type QueuePlan, type WireTree } from './flow-plan.js';
import { DEFAULT_FLOW_BOUNDS, type ChildResult, type FlowBounds, type FlowChildren, type FlowNode, type FlowSpec } from './flow-types.js';
import type { ChildFailurePolicy, ChildOutcome, FlowChildView, FlowView, JobStatus } from '../job.js';
import { MAX_BATCH } from '../queue-options.js';
import { givenNodes, preflight, skippedRoots } from './flow-preflight.js';
import { readFlow, type FlowTreeNode, type GetFlowOptions } from './flow-tree.js';
import { resolveJobId } from '../business-ids.js';

/** Options of the flow surface. */
export interface FlowOptions extends Omit<FlowRelayOptions, 'settings'> {
  /** Bounds of one flow (depth, children per node, nodes); defaults in `DEFAULT_FLOW_BOUNDS`. */
  readonly bounds?: Partial<FlowBounds>;
}

/** One child as the parent's row records it (`k:<id>` and, once delivered, `r:<id>`). */
interface RowChild {
  readonly id: string;
  readonly queue: string;
  readonly policy: ChildFailurePolicy;
  readonly key: string;
  readonly outcome?: ChildOutcome;
  readonly text?: string;
}

/** The children a parent's row records. */
function rowChildren(row: Record<string, string>): RowChild[] {
  const out: RowChild[] = [];
  for (const [f, v] of Object.entries(row)) {
    if (!f.startsWith('k:')) continue;
    const id = f.slice(2);
    const [queue, policy, key] = v.split(' ');
    const r = row[`r:${id}`];
    const sp = r === undefined ? -1 : r.indexOf(' ');
    out.push({
      id,
      queue,
      policy: policy as ChildFailurePolicy,
      key,
      outcome: r === undefined ? undefined : (r.slice(0, sp) as ChildOutcome),
      text: r === undefined ? undefined : r.slice(sp + 1),
    });
  }
  return out;
}

function decodeLoose(text: string | undefined): Json | undefined {
  try {
    return decodePayload<Json>(text);
  } catch {
    return text;
  }
}

/**
 * The flow surface of the Queue (docs/flows.md): creates flows (one flow-add call per queue of
 * the flow's root; children in other queues are created through the outbox by the relay), reads
 * a parent's children, and runs this process's relay.
 */
export class FlowService {
  /** This process's relay of the flow outboxes (started by the module for its queues). */
  readonly relay: FlowRelay;
  private readonly bounds: FlowBounds;

  /** Each queue's payload codec (its settings' `codec`), for the flow's payloads. */
  private readonly codecOf = (queue: string): PayloadCodec => this.settings(queue).codec;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly settings: FlowRelayOptions['settings'],
    opts: FlowOptions = {},
  ) {
    this.bounds = { ...DEFAULT_FLOW_BOUNDS, ...opts.bounds };
    for (const [k, v] of Object.entries(this.bounds)) {
      if (!Number.isInteger(v) || v < 1 || v > 1000) throw new InvalidOptionError(`flow bound ${k} must be an integer in 1..1000`);
    }
    this.relay = new FlowRelay(conn, { ...opts, settings });
  }

  /** Creates one flow; resolves to the ids of every node, shaped like the spec. */
  async flow<T = Json>(spec: FlowSpec<T>): Promise<FlowNode> {
    const [one] = await this.create([spec], () => 'flow');
    return one;
  }

  /**
   * Creates many flows, all or nothing for everything that can be checked (docs/flows.md, "All
   * or nothing"): every spec and every conflict between specs is validated, and the caller-given
   * ids and the outbox room are read, before the first write; then one flow-add call per queue of
   * their roots (more only past 1000 nodes or edges).
   */
  flowMany<T = Json>(specs: readonly FlowSpec<T>[]): Promise<FlowNode[]> {
    return this.create(specs, (i) => `flows[${i}]`);
  }

  private async create<T>(specs: readonly FlowSpec<T>[], path: (i: number) => string): Promise<FlowNode[]> {
    if (!Array.isArray(specs) || specs.length === 0) throw new InvalidOptionError('flowMany needs at least one flow');
    if (specs.length > MAX_BATCH) throw new BatchTooLargeError(specs.length, MAX_BATCH);
    await this.conn.ids.ready();
    const max = (q: string) => this.settings(q).maxPayloadBytes;
    const given = new Map<string, string>();
    const trees = specs.map((s, i) => encodeFlow(s as FlowSpec<unknown>, this.bounds, max, () => this.conn.ids.next('job'), path(i), given, this.codecOf));
    const byQueue = new Map<string, WireTree[]>();
    for (const t of trees) byQueue.set(t.q, [...(byQueue.get(t.q) ?? []), t]);
    const calls = [...byQueue].flatMap(([queue, roots]) => chunk(queue, roots).map((plan) => ({ queue, plan })));
    // The reads before the first write make a call of several flow-adds all or nothing. One call
    // with no caller-given id needs none: flow-add checks the outbox room itself, in the same
    // atomic step, and writes nothing when it refuses (a round trip saved per flow).
    const taken = givenNodes(trees, given);
    const replays = calls.length === 1 && taken.length === 0 ? new Set<string>() : await preflight(this.conn.client, taken, given, calls, this.relay.outboxBound);
    const skipped: string[] = [];
    const wrote = new Set<string>(); // root queues with at least one flow-add that went through
    let failed: unknown;
    await Promise.all(
      [...byQueue.keys()].map(async (q) => {
        for (const { plan } of calls.filter((c) => c.queue === q)) {
          if (failed !== undefined) return; // a call refused: no further call is started
          // The creations are written leased to this process, which relays them at once.
          const lease = this.relay.selfLease();
          try {
            const made = await flowWire.add(this.conn.scriptClient, queueKeys(q), max(q), this.relay.outboxBound, plan.nodes, plan.edges, lease);
            wrote.add(q);
            if (lease !== undefined) this.relay.relayCreated(q, writtenEntries(plan, made));
            skipped.push(...skippedRoots(plan, made).filter((id) => !replays.has(id)));
          } catch (err) {
            failed ??= err;
          }
        }
      }),
    );
    // This process relays every queue of its flows: the creations now, the hand-offs later.
    const queues = new Set<string>();
    for (const t of trees) flowQueues(t, queues);
    for (const q of queues) this.relay.watch(q);
    // After a write that went through: every queue those flows write to (their roots' queue now,
    // the children's through the relay) joins the registry; a refused call leaves it alone.
    const known = new Set<string>();
    for (const t of trees) if (wrote.has(t.q)) flowQueues(t, known);
    for (const q of known) announce(this.conn, 'queues', q);
    if (failed !== undefined) throw failed;
    if (skipped.length > 0) {
      throw new IdCollisionError(`flows with root ${skipped.join(', ')} were not written: one of their ids was taken after it was checked (the other flows were written)`);
    }
    return trees.map((t) => flowNodes(t));
  }

  /**
   * Gives a running job new children (fenced by its claim token): the job leaves `active` and
   * waits for them, then runs again. Resolves to their ids; `StaleTokenError` when the job is no
   * longer held under that token (nothing written). Keys must not repeat an earlier fan-out's.
   */
  async addChildren(queue: string, job: { readonly id: string; readonly token: string }, children: readonly FlowSpec[]): Promise<FlowNode[]> {
    if (typeof job?.token !== 'string' || job.token === '') throw new InvalidOptionError('addChildren needs the running job and its claim token');
    const nodes = await this.expand(queue, job.id, job.token, children);
    if (!nodes) throw new StaleTokenError(`job ${job.id} of ${queue} is no longer held under token ${job.token}: no children were added`);
    return nodes;
  }

  /**
   * Gives a `waiting` flow parent more children (docs/flows.md, "Attaching children to a waiting
   * parent"): it waits for them too. Resolves to their ids; `JobStateError` (EMQ_JOB_STATE) when
   * the job is not a waiting parent (nothing written). Keys must not repeat its other children's.
   * `parentId`: its wire id or its business id.
   */
  async attach(queue: string, parentId: string, children: readonly FlowSpec[]): Promise<FlowNode[]> {
    const id = await resolveJobId(this.conn.client, queueKeys(queue), parentId);
    const nodes = id === undefined ? undefined : await this.expand(queue, id, '', children);
    if (!nodes) throw new JobStateError(`job ${parentId} of ${queue} is not a waiting flow parent: no children were added`);
    return nodes;
  }

  /** flow-add's fan-out mode (token "" = attach to a waiting parent); undefined when refused. */
  private async expand(queue: string, id: string, token: string, children: readonly FlowSpec[]): Promise<FlowNode[] | undefined> {
    if (!Array.isArray(children) || children.length === 0) throw new InvalidOptionError('a fan-out needs at least one child');
    await this.conn.ids.ready();
    const max = (q: string) => this.settings(q).maxPayloadBytes;
    const given = new Map<string, string>();
    const tree = encodeFlow({ queue, payload: null, children } as FlowSpec<unknown>, this.bounds, max, () => this.conn.ids.next('job'), '', given, this.codecOf);
    const plan = planExpand(queue, id, tree.kids);
    const size = Math.max(plan.nodes.length, plan.edges.length);
    if (size > MAX_BATCH) throw new BatchTooLargeError(size, MAX_BATCH);
    const taken = givenNodes(tree.kids, given, `${queue} ${id}`);
    const replays = await preflight(this.conn.client, taken, given, [], this.relay.outboxBound);
    if (replays.size > 0) throw new IdCollisionError(`a fan-out's child ids exist already (${[...replays].join(', ')}): a fan-out is applied once; nothing was written`);
    const lease = this.relay.selfLease();
    const ok = await flowWire.expand(this.conn.scriptClient, queueKeys(queue), max(queue), this.relay.outboxBound, { id, token }, plan.nodes, plan.edges, lease);
    if (!ok) return undefined;
    if (lease !== undefined) this.relay.relayCreated(queue, writtenEntries(plan));
    for (const q of flowQueues(tree)) {
      this.relay.watch(q);
      announce(this.conn, 'queues', q); // after the write went through
    }
    return tree.kids.map((k) => flowNodes(k, false));
  }

  /** Adds the children, then rejects with `WaitingForChildren`: what `FlowJob.waitFor` does. */
  async waitFor(queue: string, job: { readonly id: string; readonly token: string }, children: readonly FlowSpec[]): Promise<never> {
    const nodes = await this.addChildren(queue, job, children);
    throw new WaitingForChildren(nodes.map((n) => n.id));
  }

  /**
   * Makes the parent of child `id` (of `queue`) stop waiting for it (BullMQ's
   * `removeChildDependency`): the parent forgets the child and, if it was the last one out, is
   * released now. The child itself is untouched (it may still run; its outcome is then ignored).
   * Resolves false when the job has no parent, or its outcome reached the parent already (or no
   * job holds the business id given as `idOrRef`).
   */
  async removeChildDependency(queue: string, idOrRef: string): Promise<boolean> {
    const id = await resolveJobId(this.conn.client, queueKeys(queue), idOrRef);
    if (id === undefined) return false;
    const row = await wire.peek(this.conn.scriptClient, queueKeys(queue), id);
    const m = /^(\S+) (\S+)$/.exec(row.parent ?? '');
    if (!m) return false;
    const r = await flowWire.detach(this.conn.scriptClient, queueKeys(m[1]), m[2], id, this.settings(m[1]).deadCap);
    return r === 'recorded' || r === 'released';
  }

  /**
   * Resumes a flow by retrying its failed child (docs/flows.md, "Resuming a failed flow"): child
   * `id` of `queue` is `dead` and buried its root parent under `fail`, every sibling having ended
   * `done`; the parent waits for it again, then the child is retried (as `revive`), and the
   * parent runs when it completes. `JobStateError` (EMQ_JOB_STATE), nothing changed, otherwise.
   * `idOrRef`: its wire id or its business id.
   */
  async retryChild(queue: string, idOrRef: string): Promise<void> {
    const id = await resolveJobId(this.conn.client, queueKeys(queue), idOrRef);
    if (id === undefined) throw new JobStateError(`job ${idOrRef} of ${queue} is not a dead flow child`);
    const row = await wire.peek(this.conn.scriptClient, queueKeys(queue), id);
    const m = /^(\S+) (\S+)$/.exec(row.parent ?? '');
    if (row.status !== 'dead' || !m) throw new JobStateError(`job ${id} of ${queue} is not a dead flow child`);
    const [pq, pid] = [m[1], m[2]];
    const r = await flowWire.resume(this.conn.scriptClient, queueKeys(pq), pid, id, this.settings(pq).deadCap);
    if (r === -1) throw new JobStateError(`parent ${pid} of ${pq} was not buried by the failure of ${id}: nothing to resume`);
    if (r !== 4) throw new JobStateError(`parent ${pid} of ${pq} cannot resume: a sibling of ${id} did not end done, or it has a parent of its own (re-create the flow)`);
    this.relay.watch(queue);
    this.relay.watch(pq);
    const back = await adminWire.reviveOne(this.conn.scriptClient, queueKeys(queue), id).catch(() => 0);
    if (back === 1) return;
    // The child changed meanwhile (revived, removed): the parent is buried again by its failure.
    await flowWire.deliver(this.conn.scriptClient, queueKeys(pq), { parentId: pid, childId: id, outcome: 'failed', text: row.error ?? 'failed' }, this.settings(pq).deadCap);
    throw new JobStateError(`job ${id} of ${queue} could not be retried (no longer dead); its parent stays buried`);
  }

  /**
   * Reads a flow from node `id` of `queue` down (docs/flows.md, "Reading a flow"): each node's
   * status, key, policy and recorded outcome, and a page of its children; null when no such job.
   * `idOrRef`: the node's wire id or its business id.
   */
  async getFlow(queue: string, idOrRef: string, opts?: GetFlowOptions): Promise<FlowTreeNode | null> {
    const id = await resolveJobId(this.conn.client, queueKeys(queue), idOrRef);
    return id === undefined ? null : readFlow(this.conn, queue, id, opts);
  }

  /** The results of a parent's children (what a `@Flow` handler receives). */
  async children<R = Json>(queue: string, id: string): Promise<FlowChildren<R>> {
    const row = await wire.peek(this.conn.scriptClient, queueKeys(queue), id);
    const list: ChildResult<R>[] = [];
    for (const c of rowChildren(row)) {
      if (!c.outcome || (c.outcome !== 'done' && c.policy === 'ignore')) continue;
      const base = { id: c.id, queue: c.queue, key: c.key, policy: c.policy, outcome: c.outcome };
      list.push(c.outcome === 'done' ? { ...base, result: decodeLoose(c.text) as R | undefined } : { ...base, error: c.text });
    }
    return {
      list,
      byId: Object.fromEntries(list.map((r) => [r.id, r])),
      byKey: Object.fromEntries(list.map((r) => [r.key, r])),
    };
  }

  /** The flow fields of a job's row (for `getJob`): its parent, its children and their states. */
  async view(row: Record<string, string>): Promise<FlowView> {
    const kids = rowChildren(row);
    const out: { parent?: FlowView['parent']; children?: FlowChildView[]; waitingFor?: number } = {};
    if (row.parent) {
      const [queue, id] = row.parent.split(' ');
      out.parent = { queue, id };
    }
    if (kids.length > 0) {
      out.children = await Promise.all(
        kids.map(async (c): Promise<FlowChildView> => {
          const base = { id: c.id, queue: c.queue, key: c.key, policy: c.policy };
          if (c.outcome === 'done') return { ...base, outcome: c.outcome, result: decodeLoose(c.text) };
          if (c.outcome) return { ...base, outcome: c.outcome, error: c.text };
          const now = await wire.peek(this.conn.scriptClient, queueKeys(c.queue), c.id).catch(() => ({}) as Record<string, string>);
          return { ...base, status: (now.status as JobStatus | undefined) ?? undefined };
        }),
      );
      if (row.status === 'waiting') out.waitingFor = Number(row.deps ?? 0);
    }
    return out;
  }

  /** Stops this process's relay. */
  close(): Promise<void> {
    return this.relay.close();
  }
}

/** Plans of one queue's roots, split so each call stays within 1000 nodes and 1000 edges (each root planned once). */
function chunk(queue: string, roots: readonly WireTree[]): QueuePlan[] {
  const plans = roots.map((tree) => planQueue(queue, [{ tree, up: '' }]));
  for (const p of plans) if (planSize(p) > MAX_BATCH) throw new BatchTooLargeError(planSize(p), MAX_BATCH);
  return planRanges(plans).map(([from, to]) => mergePlans(plans.slice(from, to)));
}
