import { randomBytes } from 'node:crypto';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { startValkeyCluster, type ClusterNode, type ValkeyCluster, type ValkeyClusterOptions } from '../../src/testing/valkey-cluster.js';
import { namesOnDistinctOwners, slotOfName } from '../../src/testing/valkey-cluster-topology.js';
import { eventually } from './valkey.js';

/** What a cluster test file shares: one local cluster and the connections opened on it. */
export interface ClusterFixture {
  cluster: ValkeyCluster;
  /** Opens an EchoMQ connection on the cluster's seeds (closed after the file). */
  connect(): Promise<EchoMqConnection>;
  /**
   * `count` fresh random names whose slots are served by `count` distinct primaries (asserted
   * for `{name}` tags); `slotOf` places other keys, e.g. cache entries.
   */
  spread(prefix: string, count?: number, slotOf?: (name: string) => number): Promise<string[]>;
}

/**
 * Registers hooks that start a cluster before the file and stop it (and its connections) after.
 * E.g. three queues of one flow on three primaries:
 * `const f = clusterFixture(); … const [a, b, c] = await f.spread('flow'); const conn = await f.connect();`
 */
export function clusterFixture(opts: ValkeyClusterOptions = {}): ClusterFixture {
  const conns: EchoMqConnection[] = [];
  const f: ClusterFixture = {
    cluster: undefined as unknown as ValkeyCluster,
    async connect() {
      const conn = new EchoMqConnection({ cluster: [...f.cluster.seeds], connectTimeoutMs: 5000 });
      await conn.open();
      conns.push(conn);
      return conn;
    },
    async spread(prefix, count = 3, slotOf) {
      const primaries = await f.cluster.primaries();
      const owner = (slot: number) => primaries.find((p) => p.slots.some(([lo, hi]) => slot >= lo && slot <= hi))?.id;
      const names = namesOnDistinctOwners(`${prefix}-${randomBytes(4).toString('hex')}`, count, owner, slotOf);
      if (!slotOf) await expectOnDistinctPrimaries(f.cluster, names);
      return names;
    },
  };
  beforeAll(async () => {
    f.cluster = await startValkeyCluster(opts);
  }, 60_000);
  afterAll(async () => {
    await Promise.allSettled(conns.splice(0).map((c) => c.close()));
    await f.cluster?.stop();
  }, 30_000);
  return f;
}

/** The primary serving the `{name}` slot, checked against the server's own `CLUSTER KEYSLOT`. */
export async function primaryOf(cluster: ValkeyCluster, name: string): Promise<ClusterNode> {
  const owner = await cluster.ownerOf(`{${name}}`);
  expect(Number(await cluster.admin(owner).call('CLUSTER', 'KEYSLOT', `emq:{${name}}:meta`))).toBe(slotOfName(name));
  return owner;
}

/** Asserts (by `CLUSTER KEYSLOT` and the cluster's slot map) that the names live on distinct primaries. */
export async function expectOnDistinctPrimaries(cluster: ValkeyCluster, names: readonly string[]): Promise<ClusterNode[]> {
  const owners = await Promise.all(names.map((n) => primaryOf(cluster, n)));
  expect(new Set(owners.map((o) => o.port)).size).toBe(names.length);
  return owners;
}

/** Waits until every replica of `primary` has its writes so far (async replication: a kill -9 loses the rest). */
export async function replicated(cluster: ValkeyCluster, primary: ClusterNode): Promise<void> {
  const offset = (text: string, field: string) => Number(new RegExp(`${field}:(\\d+)`).exec(text)?.[1] ?? -1);
  const target = offset(String(await cluster.admin(primary).call('INFO', 'replication')), 'master_repl_offset');
  const replicas = (await cluster.topology()).filter((n) => n.primaryId === primary.id && n.alive);
  await eventually(async () => {
    const infos = await Promise.all(replicas.map((r) => cluster.admin(r).call('INFO', 'replication').then(String)));
    return infos.every((i) => offset(i, 'slave_repl_offset') >= target);
  }, 10_000, 'the replicas to catch up');
}
