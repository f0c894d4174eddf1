import type { FlowSpec } from '../../src/queue/flows/flow-types.js';
import { EchoMqError } from '../../src/core/errors.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { refusedUnchanged } from '../helpers/refusals.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const f = queueFixture();

afterAll(async () => {
  await f.queues?.flows.close();
});

describe('flows: delayed leaves (delay / runAt, as the enqueue options)', () => {
  it('a leaf\'s priority and lane place it as an enqueue would: a priority-9 child runs first, a lone lane is not starved', async () => {
    const [p, c, l] = [randomQueue('pp'), randomQueue('pc'), randomQueue('pl')];
    const plain = { queue: c, payload: { n: 'plain' } };
    const byLane = (lane: string) => ({ queue: l, payload: { n: lane }, lane });
    const flow = await f.queues.flow({
      queue: p,
      payload: { n: 'parent' },
      children: [plain, plain, plain, { queue: c, payload: { n: 'urgent' }, priority: 9 }, byLane('a'), byLane('a'), byLane('a'), byLane('b'), { queue: c, payload: { n: 'later' }, priority: 5, delay: 300 }],
    });
    const order: Record<string, string[]> = { [c]: [], [l]: [] };
    // The children are created (by this process's relay) before any consumer starts.
    await eventually(async () => (await f.raw.hlen(`emq:{${c}}:data`)) === 5 && (await f.raw.hlen(`emq:{${l}}:data`)) === 4, 5000, 'the children to be created');
    for (const q of [c, l]) f.consumers.push((await startConsumer(f.conn, q, (job) => void order[q].push((job.payload as { n: string }).n), { prefetch: 0 })).consumer);
    f.consumers.push((await startConsumer(f.conn, p, () => 1)).consumer);
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.status === 'done', 10_000, 'the parent to run');
    expect(order[c][0]).toBe('urgent');
    expect(order[c]).toContain('later');
    expect(order[l].slice(0, 2)).toContain('b');
  });


  it('a delayed child, in the parent\'s queue or another, waits scheduled; the parent runs after it', async () => {
    const [p, c] = [randomQueue('dp'), randomQueue('dc')];
    const ran: Record<string, number> = {};
    for (const q of [p, c]) {
      f.consumers.push((await startConsumer(f.conn, q, (job) => ((ran[(job.payload as { n: string }).n] = Date.now()), 1))).consumer);
    }
    const t0 = Date.now();
    const flow = await f.queues.flow({
      queue: p,
      payload: { n: 'parent' },
      children: [
        { queue: c, payload: { n: 'late' }, delay: 1200 },
        { queue: p, payload: { n: 'at' }, runAt: new Date(t0 + 1200) },
        { queue: c, payload: { n: 'now' } },
      ],
    });
    const [late, at, now] = flow.children.map((k) => k.id);
    await eventually(async () => ran.now !== undefined, 5000, 'the undelayed child to run');
    await eventually(async () => (await f.queues.getJob(c, late))?.status === 'scheduled', 2000, 'the delayed child to be scheduled');
    expect((await f.queues.getJob(p, at))?.status).toBe('scheduled');
    expect((await f.queues.getJob(p, flow.id))?.status).toBe('waiting');
    expect((await f.queues.getJob(c, now))?.status).toBe('done');
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.status === 'done', 10_000, 'the parent to run');
    expect(ran.late - t0).toBeGreaterThanOrEqual(1100);
    expect(ran.at - t0).toBeGreaterThanOrEqual(1100);
    expect(ran.parent).toBeGreaterThanOrEqual(Math.max(ran.late, ran.at));
    const parent = await f.queues.getJob(p, flow.id);
    expect(parent?.children?.map((k) => k.outcome)).toEqual(['done', 'done', 'done']);
  });

  it('refuses a delay on a node with children, delay with runAt, and out-of-range values (nothing written)', async () => {
    const [p, c] = [randomQueue('dp'), randomQueue('dc')];
    const both = [`emq:{${p}}:*`, `emq:{${c}}:*`];
    const cases: FlowSpec[] = [
      { queue: p, payload: {}, delay: 100, children: [{ queue: c, payload: {} }] },
      { queue: p, payload: {}, children: [{ queue: c, payload: {}, delay: 100, runAt: Date.now() + 100 }] },
      { queue: p, payload: {}, children: [{ queue: c, payload: {}, delay: -1 }] },
      { queue: p, payload: {}, children: [{ queue: c, payload: {}, runAt: 'tomorrow' as unknown as number }] },
    ];
    for (const spec of cases) {
      await refusedUnchanged(f.raw, p, 'EMQ_BAD_OPTION', () => f.queues.flow(spec), both);
      const err = await f.queues.flow(spec).catch((e: unknown) => e);
      expect((err as EchoMqError).message).toMatch(/^flow/);
    }
  });
});

describe('flows: onFailure release (a failed child releases its parent at once)', () => {
  it('the parent runs with the failure while a sibling still runs; the sibling\'s outcome is recorded after', async () => {
    const [p, c] = [randomQueue('rp'), randomQueue('rc')];
    let slowDone = 0;
    let seen: { list: readonly { key: string; outcome: string; error?: string }[] } | undefined;
    f.consumers.push((await startConsumer(f.conn, c, async (job) => {
      if ((job.payload as { fail?: boolean }).fail) throw new Error('boom');
      await new Promise((r) => setTimeout(r, 1500));
      slowDone = Date.now();
      return 'slow';
    }, { concurrency: 2, attempts: 1 })).consumer);
    f.consumers.push((await startConsumer(f.conn, p, async (job) => {
      seen = await f.queues.flows.children(p, job.id);
      return Date.now();
    })).consumer);
    const flow = await f.queues.flow({
      queue: p,
      payload: {},
      children: [
        { queue: c, key: 'slow', payload: {} },
        { queue: c, key: 'bad', payload: { fail: true }, onFailure: 'release' },
      ],
    });
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.status === 'done', 5000, 'the parent to run');
    expect(slowDone).toBe(0); // released before the slow sibling finished
    expect(seen?.list.map((r) => [r.key, r.outcome])).toEqual([['bad', 'failed']]);
    await eventually(async () => slowDone > 0, 5000, 'the slow sibling to finish');
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.children?.every((k) => k.outcome) === true, 5000, 'its outcome recorded');
    expect((await f.queues.getJob(p, flow.id))?.status).toBe('done');
  });
});
