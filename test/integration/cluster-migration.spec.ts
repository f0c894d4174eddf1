import type { Subscription } from 'rxjs';
import { BusService } from '../../src/bus/bus-service.js';
import { CacheService } from '../../src/cache/cache-service.js';
import { CacheKeys, queueKeys, topicKeys } from '../../src/core/keys.js';
import type { Job, QueueEvent } from '../../src/queue/job.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { slotOfName } from '../../src/testing/valkey-cluster-topology.js';
import type { ClusterNode } from '../../src/testing/valkey-cluster.js';
import { clusterFixture, expectOnDistinctPrimaries } from '../helpers/cluster.js';
import { startConsumer } from '../helpers/consumers.js';
import { eventually } from '../helpers/valkey.js';

const f = clusterFixture({ primaries: 3 });

/** Subscribers of a sharded channel on one node. */
async function shardSubs(node: ClusterNode, channel: string): Promise<number> {
  const r = (await f.cluster.admin(node).call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number];
  return Number(r[1]);
}

describe('signals and work after a slot migration (CLUSTER SETSLOT / MIGRATE)', () => {
  it('queue events, bus signals, cache coherence and consumer wake-ups follow a queue, a topic and a namespace to their new primaries', async () => {
    const [q, t, ns] = await f.spread('mig');
    const before = await expectOnDistinctPrimaries(f.cluster, [q, t, ns]);
    const conn = await f.connect();
    const other = await f.connect();
    const late = await f.connect(); // opened before the move, touches the moved slots only after it
    const queues = new QueueService(conn);
    const bus = new BusService(conn, { trimIntervalMs: 0 });
    const a = new CacheService(conn, { namespace: ns, pollMs: 60_000 });
    const b = new CacheService(other, { namespace: ns, pollMs: 60_000 });
    const events: QueueEvent[] = [];
    const signals: unknown[] = [];
    const gates: (() => void)[] = [];
    const handler = async (job: Job<unknown>) => {
      if ((job.payload as { hold?: boolean }).hold) await new Promise<void>((r) => gates.push(r));
      return { ok: job.id };
    };
    // A long idle block: a job done well within it was claimed on a wake-up, not a re-poll.
    const { consumer, log } = await startConsumer(conn, q, handler, { concurrency: 2, leaseMs: 5000, maxIdleMs: 30_000 });
    const subs: Subscription[] = [
      queues.events(q).subscribe((e) => events.push(e)),
      bus.signals(t).subscribe((v) => signals.push(v)),
    ];
    const channels = [queueKeys(q).events, topicKeys(t).signal, new CacheKeys(ns).signal];
    try {
      await a.set('k', 1);
      expect(await b.get('k')).toBe(1);
      await eventually(async () => (await Promise.all(channels.map((c, i) => shardSubs(before[i], c)))).every((n, i) => n === (i === 2 ? 2 : 1)), 5000, 'the subscriptions');

      /** One round of every signal; resolves once all arrived, within generous bounds. */
      const round = async (n: number): Promise<void> => {
        await new Promise((r) => setTimeout(r, 200)); // the consumer is idle in its wake-up block again
        const t0 = Date.now();
        const id = await queues.enqueue(q, { n });
        await eventually(async () => (await queues.getJob(q, id))?.status === 'done', 10_000, `job ${n} to be done`);
        expect(Date.now() - t0).toBeLessThan(10_000); // well under the 30 s idle block: woken
        await eventually(() => ['enqueued', 'claimed', 'completed'].every((k) => events.some((e) => e.kind === k && e.ids.includes(id))), 5000, `the events of job ${n}`);
        expect(await bus.signal(t, { n })).toBe(1);
        await eventually(() => signals.some((v) => JSON.stringify(v) === JSON.stringify({ n })), 5000, `signal ${n}`);
        expect(await b.get('k')).toBe(n - 1); // B holds the old value in its L1
        await a.set('k', n);
        await eventually(async () => (await b.get('k')) === n, 5000, `B to see k=${n}`);
      };
      await round(2);

      // A job is running on the old primary when its slot moves.
      const held = await queues.enqueue(q, { hold: true });
      await eventually(() => gates.length === 1, 5000, 'the held job to start');

      // Move each slot to the next primary: a real migration of every key, then SETSLOT NODE everywhere.
      const primaries = await f.cluster.primaries();
      const after = before.map((o) => primaries[(primaries.findIndex((p) => p.port === o.port) + 1) % primaries.length]);
      // Enqueues keep coming while the queue's slot moves (ASK / TRYAGAIN are the client's to follow).
      let moving = true;
      const during: string[] = [];
      const producer = (async () => {
        while (moving) during.push(await queues.enqueue(q, { n: -1 }));
      })();
      try {
        for (const [i, name] of [q, t, ns].entries()) await f.cluster.moveSlot(slotOfName(name), after[i]);
      } finally {
        moving = false;
        await producer;
      }
      expect(during.length).toBeGreaterThan(0);
      for (const [i, name] of [q, t, ns].entries()) expect((await f.cluster.ownerOf(`{${name}}`)).port).toBe(after[i].port);
      expect(await f.cluster.admin(after[0]).exists(queueKeys(q).job(held))).toBe(1);

      // Every subscription is re-made on the new owner (and none is left on the old one).
      await eventually(async () => (await Promise.all(channels.map((c, i) => shardSubs(after[i], c)))).every((n, i) => n === (i === 2 ? 2 : 1)), 10_000, 'the subscriptions on the new owners');
      gates.shift()!();
      await eventually(async () => (await queues.getJob(q, held))?.status === 'done', 10_000, 'the held job to complete on the new owner');
      await eventually(async () => (await Promise.all(during.map((id) => queues.getJob(q, id)))).every((j) => j?.status === 'done'), 10_000, 'the jobs enqueued during the move');
      console.log(`migration: ${during.length} jobs enqueued during the move, all done`);
      await round(3);
      await round(4);
      // A first subscription after the move, from a client whose slot map still names the old owner.
      const lateBus = new BusService(late, { trimIntervalMs: 0 });
      const lateSignals: unknown[] = [];
      const errors: unknown[] = [];
      subs.push(lateBus.signals(t).subscribe({ next: (v) => lateSignals.push(v), error: (e) => errors.push(e) }));
      try {
        await eventually(async () => (await shardSubs(after[1], topicKeys(t).signal)) === 2, 10_000, 'the late subscription on the new owner');
        expect(await bus.signal(t, 'late')).toBe(2);
        await eventually(() => lateSignals.includes('late'), 5000, 'the late signal');
        expect(errors).toEqual([]);
      } finally {
        await lateBus.close();
      }
      expect(log.errors).toEqual([]);
    } finally {
      gates.forEach((g) => g());
      subs.forEach((s) => s.unsubscribe());
      await consumer.stop(2000);
      await Promise.all([a.close(), b.close(), bus.close()]);
    }
  }, 60_000);
});
