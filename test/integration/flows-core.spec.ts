import type { Job } from '../../src/queue/job.js';
import type { FlowSpec } from '../../src/queue/flows/flow-types.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const f = queueFixture();

afterAll(async () => {
  await f.queues?.flows.close();
});

/** Starts a consumer on each queue; `handler(queue, job)` answers for all of them. */
async function consume(queues: readonly string[], handler: (queue: string, job: Job<unknown>) => unknown): Promise<void> {
  for (const q of queues) {
    const { consumer } = await startConsumer(f.conn, q, (job) => handler(q, job), { concurrency: 8, attempts: 1 });
    f.consumers.push(consumer);
  }
}

describe('flows: fan-in across queues', () => {
  it('runs a parent once, after its 100 children over 3 queues, with their 100 results', async () => {
    const qs = [randomQueue('fa'), randomQueue('fb'), randomQueue('fc')];
    const children: FlowSpec[] = Array.from({ length: 100 }, (_, i) => ({ queue: qs[i % 3], payload: { i }, key: `c${i}` }));
    const parentRuns: { id: string; results: number }[] = [];
    const seen = new Map<string, unknown>();
    await consume(qs, async (q, job) => {
      if (q === qs[0] && (job.payload as { root?: boolean }).root) {
        const kids = await f.queues.flows.children<{ doubled: number }>(q, job.id);
        parentRuns.push({ id: job.id, results: kids.list.length });
        seen.set('c7', kids.byKey.c7?.result);
        return { sum: kids.list.reduce((s, r) => s + (r.result?.doubled ?? 0), 0) };
      }
      return { doubled: (job.payload as { i: number }).i * 2 };
    });
    const flow = await f.queues.flow({ queue: qs[0], payload: { root: true }, children });
    expect(flow.children).toHaveLength(100);
    expect(flow.children[3]).toMatchObject({ queue: qs[0], key: 'c3' });
    const waiting = await f.queues.getJob(qs[0], flow.id);
    expect(['waiting', 'pending', 'active', 'done']).toContain(waiting?.status);
    await eventually(async () => (await f.queues.getJob(qs[0], flow.id))?.status === 'done', 15_000, 'the parent to finish');
    expect(parentRuns).toEqual([{ id: flow.id, results: 100 }]);
    expect(seen.get('c7')).toEqual({ doubled: 14 });
    const parent = await f.queues.getJob(qs[0], flow.id);
    expect(parent?.result).toEqual({ sum: 9900 });
    expect(parent?.children).toHaveLength(100);
    expect(parent?.children?.every((c) => c.outcome === 'done')).toBe(true);
    const child = await f.queues.getJob(qs[1], flow.children[1].id);
    expect(child?.parent).toEqual({ queue: qs[0], id: flow.id });
    // Every outbox drained: nothing left to relay.
    for (const q of qs) expect(await f.raw.hlen(`emq:{${q}}:outbox`)).toBe(0);
  });

  it('completes a 3-level tree bottom-up, each parent seeing its own children', async () => {
    const [a, b, c] = [randomQueue('ta'), randomQueue('tb'), randomQueue('tc')];
    const order: string[] = [];
    await consume([a, b, c], async (q, job) => {
      const name = (job.payload as { name: string }).name;
      order.push(name);
      const kids = await f.queues.flows.children<string[]>(q, job.id);
      return [name, ...kids.list.flatMap((k) => k.result ?? [])];
    });
    const flow = await f.queues.flow({
      queue: a,
      payload: { name: 'root' },
      children: [
        { queue: b, payload: { name: 'mid1' }, children: [{ queue: c, payload: { name: 'leaf1' } }, { queue: a, payload: { name: 'leaf2' } }] },
        { queue: c, payload: { name: 'mid2' }, children: [{ queue: b, payload: { name: 'leaf3' } }] },
      ],
    });
    await eventually(async () => (await f.queues.getJob(a, flow.id))?.status === 'done', 15_000, 'the root to finish');
    const root = await f.queues.getJob<unknown, string[]>(a, flow.id);
    expect(root?.result?.[0]).toBe('root');
    expect([...(root?.result ?? [])].sort()).toEqual(['leaf1', 'leaf2', 'leaf3', 'mid1', 'mid2', 'root']);
    expect(order.indexOf('mid1')).toBeGreaterThan(Math.max(order.indexOf('leaf1'), order.indexOf('leaf2')));
    expect(order.indexOf('mid2')).toBeGreaterThan(order.indexOf('leaf3'));
    expect(order.at(-1)).toBe('root');
    expect(order).toHaveLength(6);
  });
});

describe('flows: failure policies', () => {
  it('fail-parent: a failing child buries the parent with its error and cancels the pending siblings', async () => {
    const [p, w, s] = [randomQueue('pp'), randomQueue('pw'), randomQueue('ps')];
    let parentRuns = 0;
    // Queue w runs (and fails); queue s has no consumer, so its children stay pending until cancelled.
    await consume([p, w], (q) => {
      if (q === p) parentRuns++;
      else throw new Error('card declined');
    });
    const flow = await f.queues.flow({
      queue: p,
      payload: {},
      children: [{ queue: w, payload: {}, key: 'pay' }, { queue: s, payload: {}, key: 'ship1' }, { queue: s, payload: {}, key: 'ship2' }],
    });
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.status === 'dead', 10_000, 'the parent to be buried');
    const parent = await f.queues.getJob(p, flow.id);
    expect(parent?.error).toContain(`child ${flow.children[0].id} failed: Error: card declined`);
    for (const sib of flow.children.slice(1)) {
      await eventually(async () => (await f.queues.getJob(s, sib.id))?.status === 'cancelled', 10_000, 'the siblings to be cancelled');
    }
    await new Promise((r) => setTimeout(r, 200));
    expect(parentRuns).toBe(0);
    const view = await f.queues.getJob(p, flow.id);
    expect(view?.children?.find((c) => c.key === 'pay')).toMatchObject({ outcome: 'failed', policy: 'fail' });
  });

  it('ignore and continue: the parent runs; the failure is recorded only under continue', async () => {
    const [p, w] = [randomQueue('ip'), randomQueue('iw')];
    const runs: { ids: string[]; errors: (string | undefined)[] }[] = [];
    await consume([p, w], async (q, job) => {
      const pl = job.payload as { fail?: boolean };
      if (q === w) {
        if (pl.fail) throw new Error('nope');
        return 'ok';
      }
      const kids = await f.queues.flows.children(q, job.id);
      runs.push({ ids: kids.list.map((k) => k.key), errors: kids.list.map((k) => k.error) });
      return null;
    });
    const ignore = await f.queues.flow({
      queue: p,
      payload: {},
      children: [{ queue: w, payload: { fail: true }, key: 'bad', onFailure: 'ignore' }, { queue: w, payload: {}, key: 'good' }],
    });
    await eventually(async () => (await f.queues.getJob(p, ignore.id))?.status === 'done', 10_000, 'the ignore parent to run');
    expect(runs).toEqual([{ ids: ['good'], errors: [undefined] }]);
    const cont = await f.queues.flow({
      queue: p,
      payload: {},
      children: [{ queue: w, payload: { fail: true }, key: 'bad', onFailure: 'continue' }, { queue: w, payload: { fail: true }, key: 'worse', onFailure: 'continue' }],
    });
    await eventually(async () => (await f.queues.getJob(p, cont.id))?.status === 'done', 10_000, 'the continue parent to run');
    expect(runs).toHaveLength(2);
    expect([...runs[1].ids].sort()).toEqual(['bad', 'worse']);
    expect(runs[1].errors.every((e) => e === 'Error: nope')).toBe(true);
  });
});

describe('flows: fanning out from a running job', () => {
  it('a handler gives its job children and ends its run; the job runs again once, with their results', async () => {
    const [p, c] = [randomQueue('xp'), randomQueue('xc')];
    const runs: { attempt: number; results: unknown[] }[] = [];
    const warnings: string[][] = [];
    for (const q of [p, c]) {
      const { consumer, log } = await startConsumer(f.conn, q, async (job) => {
        const pl = job.payload as { n: number; root?: boolean };
        if (!pl.root) return pl.n * 10;
        const kids = await f.queues.flows.children<number>(q, job.id);
        runs.push({ attempt: job.attempt, results: kids.list.map((k) => k.result).sort() });
        if (kids.list.length === 0) {
          // Children in another queue and in this one (k3).
          return f.queues.flows.waitFor(q, job, [1, 2, 3].map((n) => ({ queue: n === 3 ? p : c, payload: { n }, key: `k${n}` })));
        }
        return kids.list.reduce((s, k) => s + (k.result ?? 0), 0);
      }, { concurrency: 4 });
      f.consumers.push(consumer);
      warnings.push(log.warnings);
    }
    const id = await f.queues.enqueue(p, { n: 0, root: true });
    await eventually(async () => (await f.queues.getJob(p, id))?.status === 'done', 10_000, 'the fanned-out job to finish');
    const job = await f.queues.getJob(p, id);
    expect(runs).toEqual([{ attempt: 1, results: [] }, { attempt: 1, results: [10, 20, 30] }]);
    expect(job?.result).toBe(60);
    expect(job?.children?.map((k) => k.key).sort()).toEqual(['k1', 'k2', 'k3']);
    expect(warnings.flat()).toEqual([]);
    // A stale holder cannot fan out: the job is done, its old token refused, nothing written.
    await expect(f.queues.flows.addChildren(p, { id, token: '1' }, [{ queue: c, payload: {} }])).rejects.toMatchObject({ code: 'EMQ_STALE_TOKEN' });
  });
});
