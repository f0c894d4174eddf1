import type { ValkeyClient } from '../../core/connection/index.js';
import { FlowTooLargeError, IdCollisionError } from '../../core/errors.js';
import { queueKeys } from '../../core/keys.js';
import type { QueuePlan, WireTree } from './flow-plan.js';

/** One flow-add call a `flowMany` will make: its queue and plan. */
export interface PlannedCall {
  readonly queue: string;
  readonly plan: QueuePlan;
}

/** A node with a caller-given id: where it must be, what it hangs from, what it waits for. */
export interface GivenNode {
  readonly queue: string;
  readonly id: string;
  /** `"<queue> <id>"` of its parent, or undefined for a flow's root. */
  readonly up?: string;
  readonly kids: readonly string[];
}

/** Every node of the encoded flows whose id the caller gave (`up`: the root's parent reference, if any). */
export function givenNodes(trees: readonly WireTree[], given: ReadonlyMap<string, string>, up?: string): GivenNode[] {
  const out: GivenNode[] = [];
  const visit = (t: WireTree, parent?: string): void => {
    if (given.has(t.id)) out.push({ queue: t.q, id: t.id, up: parent, kids: t.kids.map((k) => k.id) });
    for (const k of t.kids) visit(k, `${t.q} ${t.id}`);
  };
  for (const t of trees) visit(t, up);
  return out;
}

/**
 * The reads `flowMany` makes before its first write (docs/flows.md, "All or nothing"): refuses
 * with `IdCollisionError` (EMQ_ID_COLLISION) when a caller-given id of any node, in any queue,
 * already holds a job that is not that same node of that same flow (a replay: its row names the
 * same parent, or none for a root, and every child of the spec), and with `FlowTooLargeError` (EMQ_FLOW_TOO_LARGE) when a root queue's
 * outbox has no room for the creation entries of every call on it. A write racing these reads
 * can still refuse one call after others were written (reported by the service).
 */
export async function preflight(
  client: ValkeyClient,
  nodes: readonly GivenNode[],
  given: ReadonlyMap<string, string>,
  calls: readonly PlannedCall[],
  outboxBound: number,
): Promise<Set<string>> {
  const entries = new Map<string, number>();
  for (const { queue, plan } of calls) {
    const n = plan.edges.filter((e) => e.entry !== '').length;
    if (n > 0) entries.set(queue, (entries.get(queue) ?? 0) + n);
  }
  const [taken, held] = await Promise.all([
    Promise.all(
      nodes.map(async (n): Promise<{ replay?: string; clash?: string } | undefined> => {
        const k = queueKeys(n.queue);
        const [exists, row] = await Promise.all([client.hexists(k.data, n.id), client.hmget(k.job(n.id), 'parent', ...n.kids.map((c) => `k:${c}`))]);
        if (exists === 0) return undefined;
        const same = (row[0] ?? undefined) === n.up && row.slice(1).every((v) => v !== null);
        return same ? { replay: n.id } : { clash: `${given.get(n.id)}.id ${n.id} (queue ${n.queue})` };
      }),
    ),
    Promise.all([...entries].map(async ([q, n]) => ({ q, n, held: await client.hlen(queueKeys(q).outbox) }))),
  ]);
  const clash = taken.flatMap((t) => (t?.clash ? [t.clash] : []));
  if (clash.length > 0) {
    const shown = clash.slice(0, 5).join(', ') + (clash.length > 5 ? `, … (${clash.length} in all)` : '');
    throw new IdCollisionError(`a job with this id exists already: ${shown}; nothing was written`);
  }
  for (const h of held) {
    if (h.held + h.n > outboxBound) {
      throw new FlowTooLargeError(`the outbox of ${h.q} holds ${h.held} entries and these flows add ${h.n}, its bound is ${outboxBound} (relays are behind); nothing was written`);
    }
  }
  return new Set(taken.flatMap((t) => (t?.replay ? [t.replay] : [])));
}

/** The roots (flow indexes) whose trees a flow-add call skipped (reply 0: an id was taken meanwhile). */
export function skippedRoots(plan: QueuePlan, made: readonly number[]): string[] {
  return plan.nodes.filter((n, i) => n.parent === '' && made[i] === 0).map((n) => n.id);
}
