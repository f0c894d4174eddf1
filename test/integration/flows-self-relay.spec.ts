import { queueKeys } from '../../src/core/keys.js';
import { call } from '../../src/core/scripts.js';
import { calls, wire } from '../../src/core/wire/queue.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue, rawClient } from '../helpers/valkey.js';

const f = queueFixture();

afterAll(async () => {
  await f.queues?.flows.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('flows: a completing process relays its own hand-offs (complete.lua self-relay lease)', () => {
  it('releases the parent from the complete reply: no outbox signal, the parent runs once', async () => {
    const [P, C] = [randomQueue('sp'), randomQueue('sc')];
    const relay = f.queues.flows.relay;
    const signals: string[] = [];
    const sub = rawClient();
    sub.on('smessage', (_ch: string, m: string) => signals.push(m));
    await sub.ssubscribe(queueKeys(C).outbox);
    const parentRuns: number[] = [];
    const { consumer: child } = await startConsumer(f.conn, C, (job) => ({ i: (job.payload as { i: number }).i }), {
      concurrency: 8,
      handoff: { leaseMs: relay.leaseMs, relay: (entries) => relay.relayTaken(C, entries) },
    });
    const { consumer: parent } = await startConsumer(f.conn, P, async (job) => {
      parentRuns.push((await f.queues.flows.children(P, job.id)).list.length);
    });
    f.consumers.push(child, parent);
    const flow = await f.queues.flow({ queue: P, payload: {}, children: Array.from({ length: 5 }, (_, i) => ({ queue: C, payload: { i } })) });
    await eventually(async () => (await f.queues.getJob(P, flow.id))?.status === 'done', 10_000, 'the parent to finish');
    await eventually(async () => (await f.raw.hlen(queueKeys(C).outbox)) === 0, 5000, 'the hand-offs to be acknowledged');
    expect(parentRuns).toEqual([5]);
    // The children's hand-offs never went through the signal (and so never through a take).
    expect(signals).toEqual([]);
    await sub.quit();
  });

  it('leaves the hand-off of a process that died before relaying it to any live relay, once its lease lapses', async () => {
    const Q = randomQueue('sd');
    const k = queueKeys(Q);
    const flow = await f.queues.flow({ queue: Q, payload: { parent: true }, children: [{ queue: Q, payload: { child: true } }] });
    const claimed = await wire.claim(f.conn.scriptClient, k, 1, 30_000);
    expect(claimed.jobs.map((j) => j.id)).toEqual([flow.children[0].id]);
    const j = claimed.jobs[0];
    // The "crashing" completer: asks for its hand-off back (leased 600 ms) and never relays it.
    const reply = await call(f.conn.scriptClient, calls.completeRelaying(k, 1000, [{ id: j.id, token: j.token, result: '{"r":1}' }], 600));
    expect(reply.ok).toEqual([1]);
    expect(reply.handoffs).toEqual([{ id: `d:${j.id}`, text: `d ${Q} ${flow.id} ${j.id} done {"r":1}` }]);
    // Another node's relay watches the queue: the leased entry is not due, so it waits...
    f.queues.flows.relay.watch(Q);
    await sleep(250);
    expect((await f.queues.getJob(Q, flow.id))?.status).toBe('waiting');
    // ...and relays it once the lease lapsed (the sweep), releasing the parent exactly once.
    await eventually(async () => (await f.queues.getJob(Q, flow.id))?.status === 'pending', 5000, 'the parent to be released');
    await eventually(async () => (await f.raw.hlen(k.outbox)) === 0, 5000, 'the entry to be acknowledged');
    expect(await f.raw.llen(k.pending)).toBe(1);
  });

  it('refuses a self-relay lease out of range, writing nothing', async () => {
    const Q = randomQueue('sb');
    const k = queueKeys(Q);
    const flow = await f.queues.flow({ queue: Q, payload: {}, children: [{ queue: Q, payload: {} }] });
    const j = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs[0];
    expect(j.id).toBe(flow.children[0].id);
    for (const lease of [0, 86_400_001]) {
      await expect(call(f.conn.scriptClient, calls.completeRelaying(k, 1000, [{ id: j.id, token: j.token, result: '' }], lease))).rejects.toMatchObject({ code: 'EMQ_BAD_ARG' });
    }
    expect((await f.queues.getJob(Q, j.id))?.status).toBe('active');
    expect(await f.raw.exists(k.outbox)).toBe(0);
  });
});

describe('flows: counts().waiting', () => {
  it('counts waiting parents through creation, release, burial and cancel', async () => {
    const Q = randomQueue('wc');
    const k = queueKeys(Q);
    const a = await f.queues.flow({ queue: Q, payload: { n: 'a' }, children: [{ queue: Q, payload: {} }] });
    const b = await f.queues.flow({ queue: Q, payload: { n: 'b' }, children: [{ queue: Q, payload: {}, onFailure: 'fail' }] });
    const c = await f.queues.flow({ queue: Q, payload: { n: 'c' }, children: [{ queue: Q, payload: {} }, { queue: Q, payload: {} }] });
    expect(await f.queues.counts(Q)).toMatchObject({ waiting: 3, pending: 4 });
    f.queues.flows.relay.watch(Q);
    // a: its child completes → released (pending).
    const byId = new Map((await wire.claim(f.conn.scriptClient, k, 4, 30_000)).jobs.map((j) => [j.id, j]));
    const ca = byId.get(a.children[0].id)!;
    await wire.complete(f.conn.scriptClient, k, 1000, [{ id: ca.id, token: ca.token, result: '1' }]);
    await eventually(async () => (await f.queues.getJob(Q, a.id))?.status === 'pending', 5000, 'a released');
    expect((await f.queues.counts(Q)).waiting).toBe(2);
    // b: its child fails fatally under `fail` → the parent is buried.
    const cb = byId.get(b.children[0].id)!;
    await wire.retry(f.conn.scriptClient, k, { id: cb.id, token: cb.token, error: 'no', fatal: true }, { maxAttempts: 1, backoff: 'f:0', deadCap: 1000 });
    await eventually(async () => (await f.queues.getJob(Q, b.id))?.status === 'dead', 5000, 'b buried');
    expect((await f.queues.counts(Q)).waiting).toBe(1);
    // c: cancelled while waiting.
    expect(await f.queues.cancel(Q, c.id)).toBe('cancelled');
    expect(await f.queues.counts(Q)).toMatchObject({ waiting: 0 });
  });
});
