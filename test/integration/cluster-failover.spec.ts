import { randomBytes } from 'node:crypto';
import type { Subscription } from 'rxjs';
import { BusService } from '../../src/bus/bus-service.js';
import { globalKeys, queueKeys } from '../../src/core/keys.js';
import type { Job, QueueEvent } from '../../src/queue/job.js';
import { QueueService } from '../../src/queue/queue-service.js';
import type { ClusterNode } from '../../src/testing/valkey-cluster.js';
import { namesOnDistinctOwners } from '../../src/testing/valkey-cluster-topology.js';
import { clusterFixture, primaryOf, replicated as caughtUp } from '../helpers/cluster.js';
import { startConsumer } from '../helpers/consumers.js';
import { startMember } from './bus-groups.helpers.js';
import { eventually } from '../helpers/valkey.js';

/** 3 primaries, each with one replica, so a killed primary is replaced by its replica. */
const f = clusterFixture({ primaries: 3, replicasPerPrimary: 1 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A queue name whose slot `node` serves. */
const nameOn = (node: ClusterNode, prefix: string): string =>
  namesOnDistinctOwners(`${prefix}-${randomBytes(4).toString('hex')}`, 1, (slot) => (node.slots.some(([lo, hi]) => slot >= lo && slot <= hi) ? node.id : undefined))[0];

/** A live primary with a live replica attached. */
async function replicatedPrimary(): Promise<ClusterNode> {
  const withReplica = (await f.cluster.topology()).filter((n) => n.role === 'replica' && n.alive).map((r) => r.primaryId);
  const primary = (await f.cluster.primaries()).find((p) => withReplica.includes(p.id));
  if (!primary) throw new Error('no primary with a replica is left');
  return primary;
}

describe('failover: kill -9 the primary of a queue (and of the node leases) while a consumer works', () => {
  it('the replica is promoted, the consumer resumes, every job ends done (exactly once, or re-delivered after its lease), none is missing', async () => {
    // The queue shares its primary with the {emq} node leases: both fail over together.
    const leasesAt = await f.cluster.ownerOf(globalKeys.nodes);
    const q = nameOn(leasesAt, 'fo');
    expect((await primaryOf(f.cluster, q)).port).toBe(leasesAt.port);
    const conn = await f.connect();
    const queues = new QueueService(conn);
    const runs = new Map<string, number>();
    const handler = async (job: Job<unknown>) => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      await sleep(15);
      return { n: (job.payload as { n: number }).n };
    };
    const N = 200;
    const ids = await queues.enqueueMany(q, Array.from({ length: N }, (_, n) => ({ payload: { n } })));
    expect(new Set(ids).size).toBe(N);
    await caughtUp(f.cluster, leasesAt); // what was acknowledged before the kill survives it
    const events: QueueEvent[] = [];
    const sub: Subscription = queues.events(q).subscribe((e) => events.push(e));
    const { consumer, log } = await startConsumer(conn, q, handler, { concurrency: 4, leaseMs: 2000, attempts: 5, maxIdleMs: 30_000 });
    try {
      await eventually(() => runs.size >= 30, 10_000, 'the consumer to be working');
      const t0 = Date.now();
      const promoted = await f.cluster.failover(leasesAt, 'kill');
      const failoverMs = Date.now() - t0;
      expect(promoted.port).not.toBe(leasesAt.port);
      expect((await f.cluster.ownerOf(`{${q}}`)).port).toBe(promoted.port);
      const doneBefore = runs.size;
      expect(doneBefore).toBeLessThan(N); // the kill really landed mid-work

      // The consumer resumes on the promoted replica and finishes everything.
      await eventually(async () => (await queues.counts(q).catch(() => undefined))?.done === N, 40_000, 'every job to be done');
      expect(await queues.counts(q)).toEqual({ scheduled: 0, pending: 0, active: 0, done: N, dead: 0, cancelled: 0, waiting: 0 });
      const views = await Promise.all(ids.map((id) => queues.getJob(q, id)));
      expect(views.filter((v) => v?.status !== 'done').map((v, i) => v?.id ?? ids[i])).toEqual([]);
      for (const id of ids) expect(runs.get(id)).toBeGreaterThanOrEqual(1);
      // A job runs twice only when its completion was lost with the primary (or it was in flight): a few, never most.
      const twice = ids.filter((id) => (runs.get(id) ?? 0) > 1);
      expect(twice.length).toBeLessThan(N / 4);
      for (const v of views) expect(v?.attempts).toBe(runs.get(v!.id));

      // New work after the failover: ids are minted under a re-certified node lease, the idle
      // consumer is woken (well within its 30 s idle block) and signals follow.
      await sleep(300);
      const t1 = Date.now();
      const extra = await queues.enqueue(q, { n: N });
      await eventually(async () => (await queues.getJob(q, extra))?.status === 'done', 10_000, 'a job enqueued after the failover');
      expect(Date.now() - t1).toBeLessThan(10_000);
      await eventually(() => events.some((e) => e.kind === 'completed' && e.ids.includes(extra)), 10_000, 'its completed event');
      expect(log.errors).toEqual([]);
      console.log(`failover: promotion ${failoverMs} ms, ${doneBefore} of ${N} run before it, ${twice.length} re-delivered, ${log.warnings.length} consumer warnings`);
      expect(await f.cluster.admin(promoted).exists(queueKeys(q).done)).toBe(1);
    } finally {
      sub.unsubscribe();
      await consumer.stop(2000);
    }
  }, 90_000);

  it('after a manual CLUSTER FAILOVER the signals and wake-ups follow the promoted replica', async () => {
    const primary = await replicatedPrimary();
    const q = nameOn(primary, 'mf');
    const conn = await f.connect();
    const queues = new QueueService(conn);
    const bus = new BusService(conn, { trimIntervalMs: 0 });
    const events: QueueEvent[] = [];
    const signals: unknown[] = [];
    const subs = [queues.events(q).subscribe((e) => events.push(e)), bus.signals(q).subscribe((v) => signals.push(v))];
    const { consumer, log } = await startConsumer(conn, q, () => 'ok', { maxIdleMs: 30_000 });
    try {
      const round = async (n: number): Promise<void> => {
        await sleep(300); // the consumer is idle in its wake-up block
        const t0 = Date.now();
        const id = await queues.enqueue(q, { n });
        await eventually(async () => (await queues.getJob(q, id))?.status === 'done', 10_000, `job ${n}`);
        expect(Date.now() - t0).toBeLessThan(10_000); // woken, not re-polled after 30 s
        await eventually(() => events.some((e) => e.kind === 'completed' && e.ids.includes(id)), 10_000, `the completed event of job ${n}`);
        await eventually(async () => (await bus.signal(q, { n })) === 1, 10_000, `the signal subscriber of round ${n}`);
        await eventually(() => signals.some((v) => JSON.stringify(v) === JSON.stringify({ n })), 5000, `signal ${n}`);
      };
      await round(1);
      const promoted = await f.cluster.failover(primary, 'manual');
      expect(promoted.port).not.toBe(primary.port);
      expect((await f.cluster.topology()).find((n) => n.port === primary.port)?.role).toBe('replica');
      await round(2);
      expect(log.errors).toEqual([]);
    } finally {
      subs.forEach((s) => s.unsubscribe());
      await consumer.stop(2000);
      await bus.close();
    }
  }, 60_000);

  it('consumers idle in their blocking waits when their primary is killed are woken on the promoted replica', async () => {
    const primary = await replicatedPrimary();
    const q = nameOn(primary, 'idle');
    const conn = await f.connect();
    const queues = new QueueService(conn);
    const bus = new BusService(conn, { trimIntervalMs: 0 });
    const { consumer, log } = await startConsumer(conn, q, () => 'ok', { maxIdleMs: 30_000 });
    // The topic shares the queue's name, so its log is on the same primary.
    const { member, log: groupLog } = await startMember(conn, { topic: q, options: { group: 'g', ackTimeoutMs: 5000 }, blockMs: 30_000, hangMs: 30_000 });
    try {
      const first = await queues.enqueue(q, { n: 1 });
      await eventually(async () => (await queues.getJob(q, first))?.status === 'done', 10_000, 'the first job');
      await bus.publish(q, { n: 1 });
      await eventually(() => groupLog.events.length === 1, 10_000, 'the first event');
      await sleep(300); // both loops are blocked on the primary now
      const promoted = await f.cluster.failover(primary, 'kill');
      const t0 = Date.now();
      const id = await queues.enqueue(q, { n: 2 });
      await bus.publish(q, { n: 2 });
      await eventually(async () => (await queues.getJob(q, id))?.status === 'done', 20_000, 'the job enqueued after the kill');
      await eventually(() => groupLog.events.length === 2, 20_000, 'the event published after the kill');
      // Well within their 30 s blocks: the waits were re-armed on the promoted replica, not timed out.
      expect(Date.now() - t0).toBeLessThan(20_000);
      expect(await f.cluster.admin(promoted).exists(queueKeys(q).done)).toBe(1);
      expect(log.errors).toEqual([]);
      console.log(`idle failover: woken ${Date.now() - t0} ms after the promotion`);
    } finally {
      await consumer.stop(2000);
      await member.stop(1000);
      await bus.close();
    }
  }, 60_000);
});
