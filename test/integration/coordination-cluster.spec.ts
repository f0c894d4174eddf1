/**
 * Coordination on a Valkey Cluster (3 primaries, one replica each): names on three primaries,
 * and a failover (kill -9) of the primary holding an elected role's lease.
 */
import { randomBytes } from 'node:crypto';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { CoordKeys } from '../../src/core/keys.js';
import { keySlot } from '../../src/core/slot.js';
import { CoordinationService, type LeaderTerm } from '../../src/index.js';
import type { ClusterNode } from '../../src/testing/valkey-cluster.js';
import { namesOnDistinctOwners } from '../../src/testing/valkey-cluster-topology.js';
import { clusterFixture, replicated } from '../helpers/cluster.js';
import { eventually } from '../helpers/valkey.js';

const f = clusterFixture({ primaries: 3, replicasPerPrimary: 1 });
const slotOfCo = (name: string): number => keySlot(new CoordKeys(name).lease);
const owns = (node: ClusterNode, slot: number): boolean => node.slots.some(([lo, hi]) => slot >= lo && slot <= hi);

describe('coordination on a 3-primary cluster', () => {
  let conn: EchoMqConnection;
  const services: CoordinationService[] = [];
  const service = (): CoordinationService => {
    const s = new CoordinationService(conn);
    services.push(s);
    return s;
  };
  beforeAll(async () => {
    conn = await f.connect();
  }, 30_000);
  afterAll(async () => {
    await Promise.allSettled(services.map((s) => s.close()));
  });

  it('leases, permits and elections on names served by three primaries (one key per call: no CROSSSLOT)', async () => {
    const primaries = await f.cluster.primaries();
    const names = namesOnDistinctOwners(`co-${randomBytes(4).toString('hex')}`, 3, (slot) => primaries.find((p) => owns(p, slot))?.id, slotOfCo);
    const owners = names.map((n) => primaries.find((p) => owns(p, slotOfCo(n)))!);
    expect(new Set(owners.map((o) => o.port)).size).toBe(3);
    const s = service();
    for (const [i, n] of names.entries()) {
      const l = (await s.tryAcquire(n, { ttlMs: 2000 }))!;
      expect(l).not.toBeNull();
      expect(await f.cluster.admin(owners[i]).hget(new CoordKeys(n).lease, 'token')).toBe(l.token.toString());
      const p = (await s.semaphore(n, { limit: 1, ttlMs: 2000 }))!;
      expect(await f.cluster.admin(owners[i]).zcard(new CoordKeys(n).sem)).toBe(1);
      await p.release();
      await l.release();
    }
    const e = s.elect(names[0], { ttlMs: 1000 });
    await e.elected();
    await e.stop();
  });

  it('a kill -9 of the primary holding a role: after the replica is promoted one leader remains and tokens never go back', async () => {
    const primaries = await f.cluster.primaries();
    const withReplica = (await f.cluster.topology()).filter((n) => n.role === 'replica' && n.alive).map((n) => n.primaryId);
    const target = primaries.find((p) => withReplica.includes(p.id))!;
    const [role] = namesOnDistinctOwners(`role-${randomBytes(4).toString('hex')}`, 1, (slot) => (owns(target, slot) ? target.id : undefined), slotOfCo);
    const ttlMs = 2000;
    const won: LeaderTerm[] = [];
    const elections = [service(), service()].map((s) => s.elect(role, { ttlMs, onElected: (t) => void won.push(t) }));
    await eventually(() => won.length === 1, 5000, 'a first leader');
    await replicated(f.cluster, target); // the lease write reached the replica before the kill
    const promoted = await f.cluster.failover(target, 'kill');
    expect(promoted.port).not.toBe(target.port);
    // Settle: the term renewed on the promoted replica, or ended and another began.
    await eventually(async () => {
      const leaders = elections.filter((e) => e.isLeader());
      return leaders.length === 1;
    }, 15_000, 'one leader after the failover');
    await new Promise((r) => setTimeout(r, ttlMs));
    const leaders = elections.filter((e) => e.isLeader());
    expect(leaders.length).toBe(1);
    for (let i = 1; i < won.length; i++) expect(won[i].token).toBeGreaterThan(won[i - 1].token);
    const state = await services[0].read(role);
    expect(state.held).toBe(true);
    expect(state.token).toBe(leaders[0].term()!.token);
    expect(state.token! >= won[0].token).toBe(true);
    console.log(`coordination: cluster failover of the role's primary: terms ${won.map((t) => t.token).join(' → ')}`);
    await Promise.all(elections.map((e) => e.stop()));
  }, 60_000);
});
