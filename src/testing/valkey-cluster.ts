import { execFile } from 'node:child_process';
import { Redis } from 'iovalkey';
import { ValkeyUnavailableError } from '../core/errors.js';
import { keySlot } from '../core/slot.js';
import { freePort, startEmbeddedValkey, waitFor, type EmbeddedValkey } from '../core/embedded-valkey.js';
import { parseClusterNodes, servingSlot, slotMapSignature, type ClusterNodeView } from './valkey-cluster-topology.js';

/** Options of `startValkeyCluster`. */
export interface ValkeyClusterOptions {
  /** Primaries (each serving a third, …, of the 16384 slots). Default 3, at least 3. */
  readonly primaries?: number;
  /** Replicas attached to every primary. Default 0. */
  readonly replicasPerPrimary?: number;
  /** `cluster-node-timeout` (ms): how soon a dead primary is failed over. Default 2000. */
  readonly nodeTimeoutMs?: number;
  /** How long startup, a migration or a failover may take before failing. Default 30000 ms. */
  readonly waitMs?: number;
  /** Extra `valkey-server` arguments for every node. */
  readonly args?: readonly string[];
}

/** A node of the cluster: its address, process and current role. */
export interface ClusterNode {
  /** The 40-hex cluster node id. */
  readonly id: string;
  /** Always `127.0.0.1`. */
  readonly host: string;
  /** Its client port. */
  readonly port: number;
  /** Its `valkey-server` process id. */
  readonly pid: number;
  /** Its role now (a failover swaps them). */
  readonly role: 'primary' | 'replica';
  /** A replica's primary id. */
  readonly primaryId?: string;
  /** Slot ranges served (inclusive), for a primary. */
  readonly slots: readonly (readonly [number, number])[];
  /** False once killed (by `failover` or `stop`). */
  readonly alive: boolean;
}

/** Where a node is: a `ClusterNode`, or just its port. */
export type NodeRef = { readonly port: number } | number;

/** A running local Valkey Cluster (see `startValkeyCluster`). */
export interface ValkeyCluster {
  /** Seed nodes for `EchoMqConnection({ cluster: seeds })`: every node started. */
  readonly seeds: readonly { host: string; port: number }[];
  /** The nodes, as of the last look (startup, `topology()`, a migration or failover). */
  readonly nodes: readonly ClusterNode[];
  /** Reads the nodes afresh (`CLUSTER NODES` on a live node). */
  topology(): Promise<ClusterNode[]>;
  /** The primaries serving slots now. */
  primaries(): Promise<ClusterNode[]>;
  /** The primary serving `slot` now. */
  ownerOfSlot(slot: number): Promise<ClusterNode>;
  /** The primary serving the slot of `key` now (a `{tag}` counts, as in `CLUSTER KEYSLOT`). */
  ownerOf(key: string): Promise<ClusterNode>;
  /** A plain admin client to one node (closed by `stop`); e.g. for `CLUSTER KEYSLOT`, `SCAN`. */
  admin(node: NodeRef): Redis;
  /**
   * Migrates `slot` to primary `to` for real: `SETSLOT IMPORTING/MIGRATING`, `MIGRATE … KEYS` in
   * batches, then `SETSLOT NODE` on every primary; resolves once every live node agrees.
   */
  moveSlot(slot: number, to: NodeRef): Promise<void>;
  /**
   * Fails a primary over to one of its replicas: `kill` (default) kill -9s the primary and waits
   * for the promotion; `manual` runs `CLUSTER FAILOVER` on the replica. Resolves to the new
   * primary once every live node agrees and reports `cluster_state:ok`.
   */
  failover(primary: NodeRef, mode?: 'kill' | 'manual'): Promise<ClusterNode>;
  /** Stops every node by pid and removes their folders. Idempotent. */
  stop(): Promise<void>;
}

interface Member {
  readonly server: EmbeddedValkey;
  readonly admin: Redis;
  id: string;
  alive: boolean;
}

const portOf = (ref: NodeRef): number => (typeof ref === 'number' ? ref : ref.port);

function run(cmd: string, args: readonly string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, [...args], { timeout: timeoutMs, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(new ValkeyUnavailableError(`${cmd} ${args.slice(0, 2).join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/**
 * One node on free ports: its own and its cluster bus port (port + 10000 would not exist above
 * 55535). Two attempts more when it fails, as another process may take a port just picked.
 */
async function startNode(args: readonly string[]): Promise<EmbeddedValkey> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startEmbeddedValkey({ args: [...args, '--cluster-port', String(await freePort())] });
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}

/**
 * Starts a local Valkey Cluster for tests: `primaries × (1 + replicasPerPrimary)` throwaway
 * `valkey-server --cluster-enabled yes` processes on free loopback ports, each in its own temp
 * folder, joined by `valkey-cli --cluster create … --cluster-replicas N --cluster-yes`. Resolves
 * once every node reports `cluster_state:ok`, all agree on the slot map and every replica is
 * in sync; a start that fails or times out stops what it started and rejects with
 * `ValkeyUnavailableError` naming the step.
 */
export async function startValkeyCluster(opts: ValkeyClusterOptions = {}): Promise<ValkeyCluster> {
  const primaries = opts.primaries ?? 3;
  const replicas = opts.replicasPerPrimary ?? 0;
  const waitMs = opts.waitMs ?? 30_000;
  if (!Number.isInteger(primaries) || primaries < 3) throw new ValkeyUnavailableError('a Valkey Cluster needs at least 3 primaries');
  if (!Number.isInteger(replicas) || replicas < 0) throw new ValkeyUnavailableError('replicasPerPrimary must be an integer >= 0');
  const args = [
    '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-announce-ip', '127.0.0.1',
    '--cluster-node-timeout', String(opts.nodeTimeoutMs ?? 2000),
    // A replica may always take over (its data age is not held against it), and syncs at once.
    '--cluster-replica-validity-factor', '0', '--cluster-allow-replica-migration', 'no',
    '--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0',
    ...(opts.args ?? []),
  ];
  const members: Member[] = [];
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await Promise.all(members.map(async (m) => {
      m.alive = false;
      m.admin.disconnect();
      await m.server.stop();
    }));
  };
  try {
    const started = await Promise.allSettled(Array.from({ length: primaries * (1 + replicas) }, () => startNode(args)));
    for (const s of started) {
      if (s.status === 'fulfilled') {
        const admin = new Redis({ host: s.value.host, port: s.value.port, maxRetriesPerRequest: 1, commandTimeout: 5000, lazyConnect: true });
        admin.on('error', () => undefined); // a killed node's client just fails its calls
        members.push({ server: s.value, admin, id: '', alive: true });
      }
    }
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    const addrs = members.map((m) => `${m.server.host}:${m.server.port}`);
    await run('valkey-cli', ['--cluster', 'create', ...addrs, '--cluster-replicas', String(replicas), '--cluster-yes'], waitMs);
    const cluster = new LocalCluster(members, waitMs, stop);
    await cluster.settled('valkey cluster: startup (cluster_state:ok on every node, one slot map, replicas in sync)', primaries * (1 + replicas));
    return cluster;
  } catch (err) {
    await stop();
    throw err;
  }
}

class LocalCluster implements ValkeyCluster {
  readonly seeds: readonly { host: string; port: number }[];
  nodes: readonly ClusterNode[] = [];

  constructor(
    private readonly members: readonly Member[],
    private readonly waitMs: number,
    readonly stop: () => Promise<void>,
  ) {
    this.seeds = members.map((m) => ({ host: m.server.host, port: m.server.port }));
  }

  admin(node: NodeRef): Redis {
    return this.member(node).admin;
  }

  private member(node: NodeRef): Member {
    const port = portOf(node);
    const m = this.members.find((x) => x.server.port === port);
    if (!m) throw new ValkeyUnavailableError(`no node of this cluster listens on port ${port}`);
    return m;
  }

  private live(): Member[] {
    return this.members.filter((m) => m.alive);
  }

  private async view(m: Member): Promise<ClusterNodeView[]> {
    return parseClusterNodes(String(await m.admin.call('CLUSTER', 'NODES')));
  }

  async topology(): Promise<ClusterNode[]> {
    let lastErr: unknown;
    for (const m of this.live()) {
      try {
        const view = await this.view(m);
        this.nodes = view.flatMap((v) => {
          const mem = this.members.find((x) => x.server.port === v.port);
          if (mem) mem.id = v.id;
          return mem ? [{ id: v.id, host: v.host, port: v.port, pid: mem.server.pid, role: v.role, primaryId: v.primaryId, slots: v.slots, alive: mem.alive }] : [];
        });
        return [...this.nodes];
      } catch (err) {
        lastErr = err;
      }
    }
    throw new ValkeyUnavailableError(`no live cluster node answered CLUSTER NODES: ${String(lastErr)}`);
  }

  async primaries(): Promise<ClusterNode[]> {
    return (await this.topology()).filter((n) => n.alive && n.role === 'primary' && n.slots.length > 0);
  }

  async ownerOfSlot(slot: number): Promise<ClusterNode> {
    const owner = (await this.primaries()).find((n) => n.slots.some(([lo, hi]) => slot >= lo && slot <= hi));
    if (!owner) throw new ValkeyUnavailableError(`no live primary serves slot ${slot}`);
    return owner;
  }

  ownerOf(key: string): Promise<ClusterNode> {
    return this.ownerOfSlot(keySlot(key));
  }

  /**
   * Waits until every live node reports `cluster_state:ok`, knows `known` nodes (when given),
   * and all of them agree on the slot map (and `agree` holds for it); then every replica's link
   * to its primary is up.
   */
  async settled(what: string, known?: number, agree: (view: ClusterNodeView[]) => boolean = () => true): Promise<void> {
    await waitFor(async () => {
      const live = this.live();
      const infos = await Promise.all(live.map((m) => m.admin.call('CLUSTER', 'INFO').then(String)));
      if (!infos.every((i) => i.includes('cluster_state:ok'))) return false;
      const views = await Promise.all(live.map((m) => this.view(m)));
      if (known !== undefined && !views.every((v) => v.length === known)) return false;
      const sig = slotMapSignature(views[0]);
      if (!views.every((v) => slotMapSignature(v) === sig && agree(v))) return false;
      const roles = await Promise.all(live.map((m) => m.admin.call('INFO', 'replication').then(String)));
      return roles.every((r) => r.includes('role:master') || r.includes('master_link_status:up'));
    }, this.waitMs, what);
    await this.topology();
  }

  async moveSlot(slot: number, to: NodeRef): Promise<void> {
    if (!Number.isInteger(slot) || slot < 0 || slot > 16383) throw new ValkeyUnavailableError(`slot must be an integer in 0..16383, got ${slot}`);
    const from = await this.ownerOfSlot(slot);
    const dst = this.member(to);
    const src = this.member(from);
    await this.topology();
    if (src === dst) return;
    if (!this.nodes.some((n) => n.port === dst.server.port && n.role === 'primary')) throw new ValkeyUnavailableError(`node ${dst.server.port} is not a primary`);
    await dst.admin.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', src.id);
    await src.admin.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', dst.id);
    for (;;) {
      const keys = (await src.admin.call('CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
      if (keys.length === 0) break;
      await src.admin.call('MIGRATE', dst.server.host, dst.server.port, '', 0, 10_000, 'REPLACE', 'KEYS', ...keys);
    }
    // The destination first (it bumps its epoch), then the source, then every other primary.
    const others = this.nodes.filter((n) => n.role === 'primary' && n.alive && n.port !== dst.server.port && n.port !== src.server.port);
    for (const m of [dst, src, ...others.map((n) => this.member(n))]) await m.admin.call('CLUSTER', 'SETSLOT', slot, 'NODE', dst.id);
    await this.settled(`valkey cluster: moving slot ${slot} to ${dst.server.port}`, undefined, (v) => servingSlot(v, slot)?.port === dst.server.port);
  }

  async failover(primary: NodeRef, mode: 'kill' | 'manual' = 'kill'): Promise<ClusterNode> {
    const old = this.member(primary);
    const topo = await this.topology();
    const me = topo.find((n) => n.port === old.server.port);
    const replica = topo.find((n) => n.alive && n.primaryId === me?.id);
    if (!me || me.role !== 'primary' || !replica) throw new ValkeyUnavailableError(`node ${old.server.port} is not a primary with a replica attached`);
    const slots = me.slots;
    if (mode === 'kill') {
      old.alive = false;
      old.admin.disconnect();
      await old.server.stop(); // SIGKILL by pid
    } else {
      await this.member(replica).admin.call('CLUSTER', 'FAILOVER');
    }
    // The slots moved away in every view; after a manual failover the old primary is a replica in each.
    const holds = (v: ClusterNodeView[]): boolean =>
      (mode === 'kill' || v.find((n) => n.port === old.server.port)?.role === 'replica') &&
      slots.every(([lo]) => {
        const s = servingSlot(v, lo);
        return s !== undefined && s.port !== old.server.port;
      });
    await this.settled(`valkey cluster: failing over ${old.server.port} (${mode})`, undefined, holds);
    return this.ownerOfSlot(slots[0][0]);
  }
}
