import type { ValkeyClient } from '../../core/connection/index.js';
import type { ScriptClient } from '../../core/scripts.js';
import { flowWire, type Delivery, type OutboxEntry } from '../../core/wire/index.js';
import { queueKeys } from '../../core/keys.js';
import { wire } from '../../core/wire/index.js';
import { batched, createOf, parseDeliver, settle } from './flow-entries.js';
import { mergePlans, planQueue, planRanges, writtenEntries, type CreateEntry } from './flow-plan.js';
import type { QueueDefaults } from '../queue-options.js';
import type { FlowReleaseListener } from '../telemetry-hooks.js';

/** What the target side reads of its relay's options (`FlowRelayOptions` is one). */
export interface RelayTargetOptions {
  /** The settings of a queue: its morgue cap, payload limit and cancelled retention. */
  readonly settings: (queue: string) => Pick<QueueDefaults, 'deadCap' | 'maxPayloadBytes' | 'keepCancelled'>;
  /** Where a malformed entry is reported. */
  readonly logger?: { warn(message: string): void };
  /** Told of each parent a delivery released. */
  readonly onReleased?: FlowReleaseListener;
}

/** What the target side needs of its relay. */
export interface RelayHooks {
  /** The self-relay lease to ask of flow-add, or undefined (closed). */
  selfLease(): number | undefined;
  /** Relays creation entries written under that lease. */
  relayCreated(queue: string, entries: readonly OutboxEntry[]): void;
  /** A queue that just received signalled outbox entries: drain it now, and watch it. */
  follow(queue: string): void;
  /** Watches (sweeps) a queue from now on. */
  watch(queue: string): void;
}

/**
 * The target side of the relay (docs/flows.md): runs taken outbox entries' idempotent target
 * scripts on their target queues, batched per target queue and kind.
 */
export class RelayTargets {
  constructor(
    /** The client target scripts run on (the relay's own client when it waits for replicas). */
    private readonly valkey: () => ValkeyClient,
    private readonly opts: RelayTargetOptions,
    private readonly outboxBound: number,
    private readonly hooks: RelayHooks,
  ) {}

  private client(): ScriptClient {
    return this.valkey() as unknown as ScriptClient;
  }

  /**
   * Relays a batch: the creations bound for one queue go in one flow-add call (idempotent per
   * tree, so batching changes nothing), the deliveries bound for one queue in one flow-deliver
   * call (applied in order, as one call each), every other entry in its own call, all at once.
   */
  async relayAll(entries: readonly OutboxEntry[]): Promise<PromiseSettledResult<void>[]> {
    const out: Promise<PromiseSettledResult<void>>[] = new Array<Promise<PromiseSettledResult<void>>>(entries.length);
    const creates = new Map<string, { at: number[]; items: CreateEntry[] }>();
    const delivers = new Map<string, { at: number[]; items: Delivery[] }>();
    const group = <T>(m: Map<string, { at: number[]; items: T[] }>, q: string, i: number, item: T): void => {
      const g = m.get(q) ?? { at: [], items: [] };
      g.at.push(i);
      g.items.push(item);
      m.set(q, g);
    };
    entries.forEach((e, i) => {
      const c = createOf(e);
      const d = e.text.startsWith('d ') ? parseDeliver(e.text) : undefined;
      if (c) group(creates, c.queue, i, c.entry);
      else if (d) group(delivers, d.queue, i, d.d);
      else out[i] = settle(this.relay(e));
    });
    // Deliveries first: a released parent is latency-critical.
    for (const [q, g] of delivers) {
      const results = this.deliver(q, g.items);
      g.at.forEach((at, j) => (out[at] = results.then((r) => r[j])));
    }
    for (const [q, g] of creates) {
      const results = this.create(q, g.items);
      g.at.forEach((at, j) => (out[at] = results.then((r) => r[j])));
    }
    return Promise.all(out);
  }

  /** Delivers outcomes to parents of `queue`: one flow-deliver call per 1000 (a refused call is retried one per call). */
  private async deliver(queue: string, ds: readonly Delivery[]): Promise<PromiseSettledResult<void>[]> {
    const t0 = Date.now();
    const cap = this.opts.settings(queue).deadCap;
    const got = await batched(ds, 1000, (part) => flowWire.deliverMany(this.client(), queueKeys(queue), part, cap));
    let buried = false;
    const out = got.map((r, i): PromiseSettledResult<void> => {
      if (r.status === 'rejected') return r;
      if (r.value === 'buried') buried = true;
      else if (r.value === 'released') this.opts.onReleased?.({ queue, parentId: ds[i].parentId, childId: ds[i].childId, outcome: ds[i].outcome }, t0);
      return { status: 'fulfilled', value: undefined };
    });
    if (buried) this.hooks.follow(queue);
    return out;
  }

  /**
   * Creates relayed subtrees in `queue`: one flow-add call for all of them (chunked past 1000 nodes
   * or edges); a refused batch is retried one subtree per call, so one bad entry fails alone.
   */
  private async create(queue: string, roots: readonly CreateEntry[]): Promise<PromiseSettledResult<void>[]> {
    const s = this.opts.settings(queue);
    const lease = this.hooks.selfLease();
    // Each subtree is planned once: a call's plan is its subtrees' plans one after the other.
    const plans = roots.map((r) => planQueue(queue, [{ tree: r.tree, up: r.up }]));
    const add = async (from: number, to: number): Promise<number> => {
      const plan = mergePlans(plans.slice(from, to));
      const made = await flowWire.add(this.client(), queueKeys(queue), s.maxPayloadBytes, this.outboxBound, plan.nodes, plan.edges, lease);
      if (lease !== undefined) this.hooks.relayCreated(queue, writtenEntries(plan, made));
      const skipped: CreateEntry[] = [];
      for (let r = from, at = 0; r < to; at += plans[r].nodes.length, r++) if (made[at] === 0) skipped.push(roots[r]);
      if (skipped.length > 0) await this.collisions(queue, skipped);
      return plan.crosses;
    };
    const out: PromiseSettledResult<void>[] = [];
    let crosses = 0;
    for (const [i, j] of planRanges(plans)) {
      try {
        crosses += await add(i, j);
        for (let k = i; k < j; k++) out.push({ status: 'fulfilled', value: undefined });
      } catch (err) {
        if (j - i === 1) out.push({ status: 'rejected', reason: err });
        else {
          for (let one = i; one < j; one++) {
            const r = await settle(add(one, one + 1));
            if (r.status === 'fulfilled') crosses += r.value;
            out.push(r.status === 'fulfilled' ? { status: 'fulfilled', value: undefined } : r);
          }
        }
      }
    }
    // Creations written under the self-relay lease are relayed by this process already; without
    // one (closed), they are signalled: either way the queue is watched (swept) from now on.
    if (crosses > 0 && lease !== undefined) this.hooks.watch(queue);
    else if (crosses > 0) this.hooks.follow(queue);
    return out;
  }

  /**
   * Creations flow-add skipped because their root id holds data: a replay (the child's row names
   * this parent) changes nothing; a job of that id that is not this child (its id was taken by
   * another job since the flow was checked) is reported to the parent as the child's failure
   * (EMQ_ID_COLLISION), so the parent never waits forever for a child that will not report.
   */
  private async collisions(queue: string, skipped: readonly CreateEntry[]): Promise<void> {
    const k = queueKeys(queue);
    const c = this.valkey();
    for (const r of skipped) {
      const parent = await c.hget(k.job(r.tree.id), 'parent');
      if (parent === r.up) continue;
      const [pq, pid] = r.up.split(' ');
      const text = `EMQ_ID_COLLISION: a job with the id ${r.tree.id} exists already in ${queue}; the child was not created`;
      this.opts.logger?.warn(`flow relay: child ${r.tree.id} of ${r.up} not created (${text}); reported to its parent as failed`);
      await flowWire.deliverMany(this.client(), queueKeys(pq), [{ parentId: pid, childId: r.tree.id, outcome: 'failed', text }], this.opts.settings(pq).deadCap);
      this.hooks.follow(pq);
    }
  }

  /** Runs one entry's target script (idempotent); queues that got entries of their own are drained too. */
  private async relay(e: OutboxEntry): Promise<void> {
    const c = this.client();
    const kind = e.text.slice(0, 2);
    if (kind === 'x ') {
      const m = /^x (\S+) (\S+)$/.exec(e.text);
      if (!m) return this.malformed(e);
      const r = await wire.cancel(c, queueKeys(m[1]), m[2], this.opts.settings(m[1]).keepCancelled);
      if (r === 1) this.hooks.follow(m[1]);
    } else {
      this.malformed(e);
    }
  }

  private malformed(e: OutboxEntry): void {
    // Another runtime's bug: it can never be relayed, so it is acknowledged (dropped) and reported.
    this.opts.logger?.warn(`flow relay: dropping malformed outbox entry ${e.id}: ${e.text.slice(0, 80)}`);
  }
}
