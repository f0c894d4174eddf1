import { Cluster, type Redis } from 'iovalkey';
import type { ValkeyClient } from '../../core/connection/index.js';
import { keySlot } from '../../core/slot.js';

/** How long a node's count of connected replicas is trusted (ms). */
const REPLICAS_TTL_MS = 1000;

interface NodeState {
  inflight?: Promise<boolean>;
  next?: Promise<boolean>;
  replicas: number;
  readAt: number;
}

/**
 * `flows.waitReplicas` (docs/flows.md, "Failover"): waits until the writes the relay's OWN client
 * sent to a node reached `replicas` replicas, with `WAIT replicas timeoutMs` on that client's
 * connection to the node, never on the shared command connection (a `WAIT` blocks the connection
 * it is sent on). Group commit: while one `WAIT` is in flight on a node, the callers that arrive
 * share the next one, sent when it returns, so each caller waits at most two timeouts and a node
 * sees at most one `WAIT` at a time. A node with fewer connected replicas than `replicas` (`INFO
 * replication`, read at most once a second) answers false at once: the `WAIT` could only time out.
 */
export class ReplicaWait {
  private readonly nodes = new Map<string, NodeState>();

  constructor(
    private readonly replicas: number,
    private readonly timeoutMs: number,
  ) {}

  /** True when every write `client` sent to the node owning `key` before this call reached the replicas. */
  async confirm(client: ValkeyClient, key: string): Promise<boolean> {
    const node = nodeOf(client, key);
    if (!node) return false;
    const id = `${String(node.options.host)}:${String(node.options.port)}`;
    let st = this.nodes.get(id);
    if (!st) this.nodes.set(id, (st = { replicas: -1, readAt: 0 }));
    try {
      if ((await this.connected(node, st)) < this.replicas) return false;
      return await this.join(node, st);
    } catch {
      return false;
    }
  }

  private async connected(node: Redis, st: NodeState): Promise<number> {
    if (Date.now() - st.readAt < REPLICAS_TTL_MS) return st.replicas;
    const info = await within(node.info('replication'), this.timeoutMs + GRACE_MS, '');
    st.replicas = Number(/connected_slaves:(\d+)/.exec(info)?.[1] ?? 0);
    st.readAt = Date.now();
    return st.replicas;
  }

  /** The `WAIT` this caller's writes are covered by: the next one sent on the node. */
  private join(node: Redis, st: NodeState): Promise<boolean> {
    const send = (): Promise<boolean> => {
      // Bounded even if the node stops answering (the relay's client has no command timeout).
      const p: Promise<boolean> = within(node.call('WAIT', this.replicas, this.timeoutMs), this.timeoutMs + GRACE_MS, 0)
        .then((n) => Number(n) >= this.replicas)
        .catch(() => false)
        .finally(() => {
          if (st.inflight === p) st.inflight = undefined;
        });
      st.inflight = p;
      return p;
    };
    if (!st.inflight) return send();
    st.next ??= st.inflight.then(() => {
      st.next = undefined;
      return send();
    });
    return st.next;
  }
}

/** How much longer than its own timeout a `WAIT` (or the `INFO` before it) may take before it counts as unconfirmed. */
const GRACE_MS = 1000;

/** `p`'s value, or `fallback` when it has not settled within `ms`. */
function within<T, F>(p: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<F>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** The connection of `client` to the primary owning `key` (the client itself when standalone). */
function nodeOf(client: ValkeyClient, key: string): Redis | undefined {
  if (!(client instanceof Cluster)) return client;
  const owner = client.slots[keySlot(key)]?.[0];
  return client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner);
}
