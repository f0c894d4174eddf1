import type { Subscription } from 'rxjs';
import { BusService } from '../../src/bus/bus-service.js';
import { CacheService } from '../../src/cache/cache-service.js';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { CacheKeys, queueKeys, topicKeys } from '../../src/core/keys.js';
import { keySlot } from '../../src/core/slot.js';
import type { QueueEvent } from '../../src/queue/job.js';
import { collect } from './bus-core.helpers.js';
import { startMember } from './bus-groups.helpers.js';
import { clusterFixture, expectOnDistinctPrimaries } from '../helpers/cluster.js';
import { lifecycleRunner } from '../helpers/lifecycle.js';
import { eventually } from '../helpers/valkey.js';

/** Every pillar on one real 3-primary Valkey Cluster, with its queues/topics/namespaces on three different primaries. */
const f = clusterFixture({ primaries: 3 });
let conn: EchoMqConnection;
beforeAll(async () => {
  conn = await f.connect();
}, 30_000);

describe('Queue on a 3-primary cluster', () => {
  it('runs the whole lifecycle on queues served by three different primaries, with their lifecycle events', async () => {
    const names = await f.spread('ql');
    const owners = await expectOnDistinctPrimaries(f.cluster, names);
    const runner = lifecycleRunner(conn);
    const seen = new Map<string, Set<string>>(names.map((q) => [q, new Set<string>()]));
    const subs: Subscription[] = names.map((q) =>
      runner.queues.events(q).subscribe((e: QueueEvent) => {
        expect(e.queue).toBe(q);
        seen.get(q)!.add(e.kind);
      }),
    );
    // Sharded subscriptions are opened to each queue's own primary.
    await eventually(async () => {
      const n = await Promise.all(names.map(async (q, i) => (await f.cluster.admin(owners[i]).call('PUBSUB', 'SHARDNUMSUB', queueKeys(q).events)) as [string, number]));
      return n.every((r) => Number(r[1]) === 1);
    }, 5000, 'the event subscriptions on three primaries');
    try {
      await Promise.all(names.map((q) => runner.run(q)));
      // The rows really live on the owning primary.
      for (const [i, q] of names.entries()) {
        expect(await f.cluster.admin(owners[i]).exists(queueKeys(q).done)).toBe(1);
      }
      const kinds = ['enqueued', 'scheduled', 'claimed', 'completed', 'retried', 'buried', 'cancelled', 'cancel-requested'];
      await eventually(() => names.every((q) => kinds.every((k) => seen.get(q)!.has(k))), 5000, 'every kind of event on every queue');
    } finally {
      subs.forEach((s) => s.unsubscribe());
      await runner.close();
    }
  }, 60_000);
});

describe('Bus on a 3-primary cluster', () => {
  it('publishes, replays, feeds a consumer group and signals on topics served by three primaries', async () => {
    const topics = await f.spread('bt');
    const owners = await expectOnDistinctPrimaries(f.cluster, topics);
    const bus = new BusService(conn, { trimIntervalMs: 0 });
    const members: Awaited<ReturnType<typeof startMember>>[] = [];
    const signals = new Map<string, unknown[]>(topics.map((t) => [t, []]));
    const subs = topics.map((t) => bus.signals(t).subscribe((v) => signals.get(t)!.push(v)));
    try {
      for (const t of topics) members.push(await startMember(conn, { topic: t, options: { group: 'g', ackTimeoutMs: 5000 } }));
      const ids = new Map<string, string[]>();
      for (const t of topics) {
        const first = await bus.publish(t, { t, n: 0 });
        const rest = await bus.publishMany(t, [1, 2, 3, 4].map((n) => ({ t, n })));
        ids.set(t, [first, ...rest]);
      }
      for (const [i, t] of topics.entries()) {
        expect(await f.cluster.admin(owners[i]).xlen(topicKeys(t).log)).toBe(5);
        const replayed = await collect(bus.replay<{ t: string; n: number }>(t));
        expect(replayed.map((e) => e.id)).toEqual(ids.get(t));
        expect(replayed.map((e) => e.payload.n)).toEqual([0, 1, 2, 3, 4]);
        const desc = await collect(bus.replay(t, { order: 'desc', from: ids.get(t)![1] }));
        expect(desc.map((e) => e.id)).toEqual(ids.get(t)!.slice(1).reverse());
      }
      await eventually(() => members.every((m) => m.log.events.length === 5), 10_000, 'each group to receive its five events');
      for (const [i, t] of topics.entries()) {
        expect(members[i].log.events.map((e) => e.id)).toEqual(ids.get(t));
        expect(members[i].log.events.every((e) => e.topic === t && e.deliveries === 1)).toBe(true);
      }
      // Signals reach the subscriber held on each topic's own primary.
      await eventually(async () => {
        const counts = await Promise.all(topics.map((t) => bus.signal(t, { ping: t })));
        return counts.every((c) => c === 1);
      }, 5000, 'every topic signal to reach its subscriber');
      await eventually(() => topics.every((t) => signals.get(t)!.some((v) => JSON.stringify(v) === JSON.stringify({ ping: t }))), 3000, 'the signals');
      expect(members.flatMap((m) => m.log.losses)).toEqual([]);
    } finally {
      subs.forEach((s) => s.unsubscribe());
      await Promise.all(members.map((m) => m.member.stop(1000)));
      await bus.close();
    }
  }, 60_000);
});

describe('Cache on a 3-primary cluster', () => {
  it('keeps two app instances coherent: a write or invalidate on one is seen by the other L1 (signals only, no polling)', async () => {
    const spaces = await f.spread('cn');
    const other = await f.connect();
    // pollMs 60 s: within this test only the sharded signal can carry an invalidation.
    const a = spaces.map((ns) => new CacheService(conn, { namespace: ns, pollMs: 60_000 }));
    const b = spaces.map((ns) => new CacheService(other, { namespace: ns, pollMs: 60_000 }));
    try {
      for (const [i, ns] of spaces.entries()) {
        const [alice, bob, carol] = await f.spread('k', 3, (k) => keySlot(new CacheKeys(ns).entry(k)));
        const keys = [alice, bob, carol, 'dave'];
        // Entries carry their own tag, so one namespace spreads over several primaries.
        const entryOwners = new Set(await Promise.all(keys.map(async (k) => (await f.cluster.ownerOf(new CacheKeys(ns).entry(k))).port)));
        expect(entryOwners.size).toBe(3);
        for (const k of keys) await a[i].set(k, { v: 1, k });
        for (const k of keys) expect(await b[i].getOrLoad(k, () => ({ v: -1, k }))).toEqual({ v: 1, k });
        const l1 = b[i].stats().l1Hits;
        for (const k of keys) expect(await b[i].get(k)).toEqual({ v: 1, k });
        expect(b[i].stats().l1Hits).toBe(l1 + keys.length); // B serves them from its L1 now
        await a[i].set(alice, { v: 2, k: alice });
        await a[i].invalidate(bob);
        await eventually(async () => JSON.stringify(await b[i].get(alice)) === JSON.stringify({ v: 2, k: alice }), 5000, `B to see the update in ${ns}`);
        await eventually(async () => (await b[i].get(bob)) === undefined, 5000, `B to see the invalidation in ${ns}`);
        // And back the other way.
        await b[i].set(carol, { v: 3, k: carol });
        await eventually(async () => JSON.stringify(await a[i].get(carol)) === JSON.stringify({ v: 3, k: carol }), 5000, `A to see the update in ${ns}`);
      }
      // A tag spans entries on several primaries: invalidateTag on A drops them from B's L1.
      const [ns0] = spaces;
      const tagged = await f.spread('t', 3, (k) => keySlot(new CacheKeys(ns0).entry(k)));
      expect(new Set(await Promise.all(tagged.map(async (k) => (await f.cluster.ownerOf(new CacheKeys(ns0).entry(k))).port))).size).toBe(3);
      for (const k of tagged) await a[0].set(k, k, { tags: ['grp'] });
      for (const k of tagged) expect(await b[0].get(k)).toBe(k);
      await a[0].invalidateTag('grp');
      await eventually(async () => (await Promise.all(tagged.map((k) => b[0].get(k)))).every((v) => v === undefined), 5000, 'B to drop the tag');
      // One load across both instances with the fill lease, whichever primary holds the entry.
      let loads = 0;
      const loader = async () => {
        loads++;
        await new Promise((r) => setTimeout(r, 100));
        return { loaded: true };
      };
      const both = await Promise.all([a[1].getOrLoad('shared', loader, { fillLease: true }), b[1].getOrLoad('shared', loader, { fillLease: true })]);
      expect(both).toEqual([{ loaded: true }, { loaded: true }]);
      expect(loads).toBe(1);
    } finally {
      await Promise.all([...a, ...b].map((c) => c.close()));
    }
  }, 60_000);
});
