import { keySlot } from '../core/slot.js';

/** One node of a cluster as `CLUSTER NODES` describes it. */
export interface ClusterNodeView {
  /** The 40-hex node id. */
  readonly id: string;
  /** The address it announces. */
  readonly host: string;
  /** Its client port. */
  readonly port: number;
  /** Its role, by its flags. */
  readonly role: 'primary' | 'replica';
  /** A replica's primary id (`undefined` for a primary). */
  readonly primaryId?: string;
  /** The node is flagged `fail` (or `fail?`) by the node that answered. */
  readonly failed: boolean;
  /** The node that answered is this one (`myself`). */
  readonly myself: boolean;
  /** The slot ranges it serves, inclusive (primaries only; migrations in progress are not listed). */
  readonly slots: readonly (readonly [number, number])[];
}

/**
 * Parses the text of `CLUSTER NODES`: one line per node,
 * `<id> <ip:port@cport[,hostname]> <flags> <primary|-> <ping> <pong> <epoch> <link> <slot>…`.
 */
export function parseClusterNodes(text: string): ClusterNodeView[] {
  const out: ClusterNodeView[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(' ');
    if (f.length < 8) continue;
    const [id, addr, flagText, primary] = f;
    const hostPort = addr.split('@')[0];
    const colon = hostPort.lastIndexOf(':');
    const flags = flagText.split(',');
    const slots: [number, number][] = [];
    for (const s of f.slice(8)) {
      if (s.startsWith('[')) continue; // `[slot->-id]` / `[slot-<-id]`: a migration in progress
      const [lo, hi] = s.split('-').map(Number);
      slots.push([lo, hi ?? lo]);
    }
    out.push({
      id,
      host: hostPort.slice(0, colon),
      port: Number(hostPort.slice(colon + 1)),
      role: flags.includes('master') ? 'primary' : 'replica',
      primaryId: primary === '-' ? undefined : primary,
      failed: flags.includes('fail') || flags.includes('fail?'),
      myself: flags.includes('myself'),
      slots,
    });
  }
  return out;
}

/** The node serving `slot` in a parsed `CLUSTER NODES` view, if any. */
export function servingSlot(view: readonly ClusterNodeView[], slot: number): ClusterNodeView | undefined {
  return view.find((n) => n.role === 'primary' && !n.failed && n.slots.some(([lo, hi]) => slot >= lo && slot <= hi));
}

/** A canonical text of who serves which slots (`port:lo-hi,…;…`), to compare nodes' views. */
export function slotMapSignature(view: readonly ClusterNodeView[]): string {
  return view
    .filter((n) => n.role === 'primary' && n.slots.length > 0)
    .map((n) => `${n.port}:${n.slots.map(([lo, hi]) => `${lo}-${hi}`).join(',')}`)
    .sort()
    .join(';');
}

/** The slot of a queue, topic or cache namespace `name` (its keys carry the `{name}` tag). */
export const slotOfName = (name: string): number => keySlot(`{${name}}`);

/**
 * Picks `count` names `<prefix>-<n>` (n = 0, 1, …) whose slots are served by `count` distinct
 * owners, as `ownerOfSlot` says (e.g. the primaries of a cluster). A name's slot is that of its
 * `{name}` tag (queues, topics, namespaces), or `slotOf(name)` (e.g. of a cache entry's key).
 * Pure; throws when the owners are fewer than `count` or none fit within 100,000 candidates.
 */
export function namesOnDistinctOwners(
  prefix: string,
  count: number,
  ownerOfSlot: (slot: number) => string | undefined,
  slotOf: (name: string) => number = slotOfName,
): string[] {
  const picked = new Map<string, string>();
  for (let n = 0; n < 100_000 && picked.size < count; n++) {
    const name = `${prefix}-${n}`;
    const owner = ownerOfSlot(slotOf(name));
    if (owner !== undefined && !picked.has(owner)) picked.set(owner, name);
  }
  if (picked.size < count) throw new Error(`cannot place ${count} names with prefix ${prefix} on distinct owners`);
  return [...picked.values()];
}
