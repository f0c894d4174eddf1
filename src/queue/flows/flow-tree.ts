import { decodePayload, type Json } from '../../core/codec.js';
import type { EchoMqConnection } from '../../core/connection/index.js';
import { InvalidOptionError } from '../../core/errors.js';
import { intIn } from '../../core/known-keys.js';
import { queueKeys } from '../../core/keys.js';
import { wire } from '../../core/wire/index.js';
import type { ChildFailurePolicy, ChildOutcome, JobStatus } from '../job.js';

/** How much of a flow `getFlow` reads. */
export interface GetFlowOptions {
  /** Levels below the node read (0 = the node alone). Default 10, at most 10. */
  readonly depth?: number;
  /** Children read per node (a page). Default 100, 1..1000. */
  readonly limit?: number;
  /** The first of the node's own children to read (its next page: the last `offset + limit`). Default 0. */
  readonly offset?: number;
}

/** One node of a flow as `getFlow` reads it. */
export interface FlowTreeNode {
  /** Its job id. */
  readonly id: string;
  /** Its queue. */
  readonly queue: string;
  /** Its status now; undefined when the job is gone (trimmed by retention, or never created yet). */
  readonly status?: JobStatus;
  /** Its key among its siblings (absent for the node read). */
  readonly key?: string;
  /** Its failure policy towards its parent (absent for the node read). */
  readonly policy?: ChildFailurePolicy;
  /** Its outcome as its parent recorded it (absent while out, and for the node read). */
  readonly outcome?: ChildOutcome;
  /** Its result as its parent recorded it (outcome `done`). */
  readonly result?: Json;
  /** Its error as its parent recorded it (outcome `failed` / `cancelled`). */
  readonly error?: string;
  /** How many children it has. */
  readonly childCount: number;
  /** A page of its children (`limit` of them, from `offset` for the node read, from 0 below it). */
  readonly children: readonly FlowTreeNode[];
}

const loose = (text: string): Json | undefined => {
  try {
    return decodePayload<Json>(text);
  } catch {
    return text;
  }
};

/**
 * Reads a flow from one node down (docs/flows.md, "Reading a flow"): each node's row (one peek
 * per node, a level at a time), its children in the order its row holds them, a page of `limit`
 * per node; page further with `offset`, or by reading a child as a node of its own.
 */
export async function readFlow(conn: EchoMqConnection, queue: string, id: string, opts: GetFlowOptions = {}): Promise<FlowTreeNode | null> {
  const depth = opts.depth === undefined ? 10 : intIn(opts.depth, 0, 10, 'getFlow depth');
  const limit = opts.limit === undefined ? 100 : intIn(opts.limit, 1, 1000, 'getFlow limit');
  const offset = opts.offset === undefined ? 0 : intIn(opts.offset, 0, 1_000_000, 'getFlow offset');
  if (typeof queue !== 'string' || typeof id !== 'string') throw new InvalidOptionError('getFlow needs a queue and a job id');
  const peek = (q: string, jid: string) => wire.peek(conn.scriptClient, queueKeys(q), jid).catch(() => ({}) as Record<string, string>);
  type Edge = { id: string; queue: string; key?: string; policy?: ChildFailurePolicy; r?: string };
  const build = async (e: Edge, row: Record<string, string>, level: number, from: number): Promise<FlowTreeNode> => {
    const edges: Edge[] = [];
    for (const [f, v] of Object.entries(row)) {
      if (!f.startsWith('k:')) continue;
      const [q, policy, key] = v.split(' ');
      edges.push({ id: f.slice(2), queue: q, key, policy: policy as ChildFailurePolicy, r: row[`r:${f.slice(2)}`] });
    }
    const page = level < depth ? edges.slice(from, from + limit) : [];
    const rows = await Promise.all(page.map((c) => peek(c.queue, c.id)));
    const children = await Promise.all(page.map((c, i) => build(c, rows[i], level + 1, 0)));
    const sp = e.r === undefined ? -1 : e.r.indexOf(' ');
    const outcome = e.r === undefined ? undefined : (e.r.slice(0, sp) as ChildOutcome);
    const text = e.r === undefined ? undefined : e.r.slice(sp + 1);
    return {
      id: e.id,
      queue: e.queue,
      status: (row.status as JobStatus | undefined) ?? undefined,
      ...(e.key === undefined ? {} : { key: e.key, policy: e.policy }),
      ...(outcome === undefined ? {} : outcome === 'done' ? { outcome, result: loose(text ?? '') } : { outcome, error: text }),
      childCount: edges.length,
      children,
    };
  };
  const row = await peek(queue, id);
  if (Object.keys(row).length === 0) return null;
  return build({ id, queue }, row, 0, offset);
}
