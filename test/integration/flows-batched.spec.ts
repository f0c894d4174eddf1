import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { queueKeys } from '../../src/core/keys.js';
import type { Consumer } from '../../src/queue/consumer/consumer.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, openConnection, randomQueue, rawClient } from '../helpers/valkey.js';

const f = queueFixture();
const extra: { conns: EchoMqConnection[]; services: QueueService[] } = { conns: [], services: [] };

afterEach(async () => {
  await Promise.all(extra.services.splice(0).map((s) => s.flows.close()));
  await Promise.all(extra.conns.splice(0).map((c) => c.close()));
});
afterAll(async () => {
  await f.queues?.flows.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A process of its own: a connection and a QueueService whose relay uses these flow options. */
async function proc(flows: { leaseMs?: number; sweepMs?: number }): Promise<{ conn: EchoMqConnection; svc: QueueService }> {
  const conn = await openConnection();
  const svc = new QueueService(conn, undefined, {}, flows);
  extra.conns.push(conn);
  extra.services.push(svc);
  return { conn, svc };
}

/** A consumer of `queue` in `p` that relays its completions' hand-offs, as the module configures it. */
async function relaying(p: { conn: EchoMqConnection; svc: QueueService }, queue: string, handler: Parameters<typeof startConsumer>[2]): Promise<Consumer> {
  const relay = p.svc.flows.relay;
  const { consumer } = await startConsumer(p.conn, queue, handler, {
    concurrency: 16,
    handoff: { leaseMs: relay.leaseMs, relay: (entries) => relay.relayTaken(queue, entries) },
  });
  f.consumers.push(consumer);
  return consumer;
}

describe('flows: the creator relays its own creations (flow-add self-relay lease)', () => {
  it('creates the children in their queue at once: no outbox signal, no sweep', async () => {
    const [P, C] = [randomQueue('cp'), randomQueue('cc')];
    // A sweep period far beyond the test: only the self-relay can create the children.
    const a = await proc({ sweepMs: 600_000 });
    const signals: string[] = [];
    const sub = rawClient();
    sub.on('smessage', (_ch: string, m: string) => signals.push(m));
    await sub.ssubscribe(queueKeys(P).outbox);
    const flows = await a.svc.flows.flowMany(
      Array.from({ length: 20 }, (_, fi) => ({ queue: P, payload: { fi }, children: Array.from({ length: 5 }, (_, i) => ({ queue: C, payload: { fi, i } })) })),
    );
    await eventually(async () => (await f.raw.llen(queueKeys(C).pending)) === 100, 5000, 'the 100 children to be created');
    await eventually(async () => (await f.raw.hlen(queueKeys(P).outbox)) === 0, 5000, 'the creations to be acknowledged');
    expect(signals).toEqual([]);
    const child = await f.queues.getJob(C, flows[7].children[3].id);
    expect(child?.status).toBe('pending');
    expect(child?.parent).toEqual({ queue: P, id: flows[7].id });
    await sub.quit();
  });
});

describe('flows: relays racing over the same entries (outbox lease 1 ms)', () => {
  it('every child is created and runs once, every parent is released and runs once, with all its results', async () => {
    const [P, C] = [randomQueue('rp'), randomQueue('rc')];
    // With a 1 ms lease every entry a process holds (its creations, its completions' hand-offs) is
    // due again at once: the other process's sweep (every 5 ms) takes and relays it concurrently.
    const a = await proc({ leaseMs: 1, sweepMs: 5 });
    const b = await proc({ leaseMs: 1, sweepMs: 5 });
    b.svc.flows.relay.watch(P);
    b.svc.flows.relay.watch(C);
    const childRuns = new Map<string, number>();
    const parentRuns = new Map<string, number[]>();
    const child = (job: { id: string; payload: unknown }) => {
      childRuns.set(job.id, (childRuns.get(job.id) ?? 0) + 1);
      return { i: (job.payload as { i: number }).i };
    };
    const parent = (svc: QueueService) => async (job: { id: string }) => {
      const results = await svc.flows.children<{ i: number }>(P, job.id);
      parentRuns.set(job.id, [...(parentRuns.get(job.id) ?? []), results.list.length]);
    };
    for (const p of [a, b]) {
      await relaying(p, C, child);
      await relaying(p, P, parent(p.svc));
    }
    const spec = (fi: number) => ({ queue: P, payload: { fi }, children: Array.from({ length: 10 }, (_, i) => ({ queue: C, payload: { fi, i } })) });
    const created = [
      ...(await a.svc.flows.flowMany(Array.from({ length: 20 }, (_, i) => spec(i)))),
      ...(await Promise.all(Array.from({ length: 20 }, (_, i) => a.svc.flows.flow(spec(20 + i))))),
    ];
    const ids = created.map((n) => n.id);
    await eventually(async () => ids.every((id) => parentRuns.has(id)), 20_000, 'every parent to run');
    for (const q of [P, C]) await eventually(async () => (await f.raw.hlen(queueKeys(q).outbox)) === 0, 5000, `the ${q} outbox to drain`);
    await sleep(300); // a late duplicate would show by now
    expect(ids.filter((id) => JSON.stringify(parentRuns.get(id)) !== '[10]')).toEqual([]);
    const kids = created.flatMap((n) => n.children.map((c) => c.id));
    expect(childRuns.size).toBe(400);
    expect(kids.filter((id) => childRuns.get(id) !== 1)).toEqual([]);
    expect(await f.raw.hlen(queueKeys(C).data)).toBe(400);
  });
});

describe('flows: a batch of deliveries with one bad entry', () => {
  it('delivers the others; the bad one alone is refused and stays in the outbox', async () => {
    const [P, C] = [randomQueue('bp'), randomQueue('bc')];
    const flow = await f.queues.flow({ queue: P, payload: {}, children: [{ queue: C, payload: {} }, { queue: C, payload: {} }] });
    const [c1, c2] = flow.children.map((c) => c.id);
    const box = queueKeys(C);
    await eventually(async () => (await f.raw.hlen(box.data)) === 2, 5000, 'the children to be created');
    // Hand-offs as complete.lua writes them, plus one naming a malformed parent id (another runtime's bug).
    const now = Date.now();
    await f.raw.hset(box.outbox, `d:${c1}`, `d ${P} ${flow.id} ${c1} done 1`, `d:${c2}`, `d ${P} ${flow.id} ${c2} done 2`, 'd:job00000000zzz', `d ${P} jobBAD job00000000zzz done 3`);
    await f.raw.zadd(box.outdue, now, `d:${c1}`, now, `d:${c2}`, now, 'd:job00000000zzz');
    f.queues.flows.relay.watch(C);
    await eventually(async () => (await f.queues.getJob(P, flow.id))?.status === 'pending', 5000, 'the parent to be released');
    const results = await f.queues.flows.children<number>(P, flow.id);
    expect(results.list.map((r) => r.result).sort()).toEqual([1, 2]);
    await eventually(async () => (await f.raw.hlen(box.outbox)) === 1, 5000, 'the good entries to be acknowledged');
    expect(await f.raw.hexists(box.outbox, 'd:job00000000zzz')).toBe(1);
  });
});
