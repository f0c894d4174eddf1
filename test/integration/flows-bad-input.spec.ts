import type { FlowSpec } from '../../src/queue/flows/flow-types.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { refusedUnchanged } from '../helpers/refusals.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const f = queueFixture();

afterAll(async () => {
  await f.queues?.flows.close();
});

/** A chain of `depth` nodes, each the only child of the one above. */
function chain(q: string, depth: number): FlowSpec {
  let node: FlowSpec = { queue: q, payload: { d: depth } };
  for (let d = depth - 1; d >= 1; d--) node = { queue: q, payload: { d }, children: [node] };
  return node;
}

describe('flows: bad input is refused with a typed error and nothing written', () => {
  const a = randomQueue('ba');
  const b = randomQueue('bb');
  const both = [`emq:{${a}}:*`, `emq:{${b}}:*`];

  it('refuses a spec whose object graph has a cycle (EMQ_FLOW_CYCLE)', async () => {
    const child: { queue: string; payload: Record<string, never>; children: FlowSpec[] } = { queue: b, payload: {}, children: [] };
    const root: FlowSpec = { queue: a, payload: {}, children: [child] };
    child.children.push(root);
    await refusedUnchanged(f.raw, a, 'EMQ_FLOW_CYCLE', () => f.queues.flow(root), both);
  });

  it('refuses a flow over the depth bound (EMQ_FLOW_TOO_DEEP) and accepts one at it', async () => {
    await refusedUnchanged(f.raw, a, 'EMQ_FLOW_TOO_DEEP', () => f.queues.flow(chain(a, 11)), both);
    const svc = new QueueService(f.conn, undefined, undefined, { bounds: { maxDepth: 3 } });
    await refusedUnchanged(f.raw, a, 'EMQ_FLOW_TOO_DEEP', () => svc.flow(chain(a, 4)), both);
    await svc.flows.close();
  });

  it('refuses a node over the children bound and a flow over the node bound (EMQ_FLOW_TOO_LARGE)', async () => {
    const wide: FlowSpec = { queue: a, payload: {}, children: Array.from({ length: 1001 }, () => ({ queue: b, payload: {} })) };
    await refusedUnchanged(f.raw, a, 'EMQ_FLOW_TOO_LARGE', () => f.queues.flow(wide), both);
    const svc = new QueueService(f.conn, undefined, undefined, { bounds: { maxNodes: 10 } });
    const big: FlowSpec = { queue: a, payload: {}, children: Array.from({ length: 10 }, () => ({ queue: b, payload: {} })) };
    await refusedUnchanged(f.raw, a, 'EMQ_FLOW_TOO_LARGE', () => svc.flow(big), both);
    await svc.flows.close();
  });

  it('refuses a queue name that breaks the grammar, anywhere in the tree (EMQ_BAD_NAME)', async () => {
    for (const bad of ['has{brace}', 'a:b', '', 'x'.repeat(101)]) {
      const spec: FlowSpec = { queue: a, payload: {}, children: [{ queue: b, payload: {}, children: [{ queue: bad, payload: {} }] }] };
      await refusedUnchanged(f.raw, a, 'EMQ_BAD_NAME', () => f.queues.flow(spec), both);
    }
  });

  it('refuses a child payload that is not JSON (EMQ_BAD_PAYLOAD) and one over the limit (EMQ_PAYLOAD_TOO_LARGE)', async () => {
    for (const payload of [undefined, () => 1, 10n, Symbol('s')]) {
      const spec = { queue: a, payload: {}, children: [{ queue: b, payload }] } as unknown as FlowSpec;
      await refusedUnchanged(f.raw, a, 'EMQ_BAD_PAYLOAD', () => f.queues.flow(spec), both);
    }
    const huge: FlowSpec = { queue: a, payload: {}, children: [{ queue: b, payload: 'x'.repeat(600 * 1024) }] };
    await refusedUnchanged(f.raw, a, 'EMQ_PAYLOAD_TOO_LARGE', () => f.queues.flow(huge), both);
  });

  it('refuses bad keys, policies, ids and options (EMQ_BAD_OPTION / EMQ_BAD_ID)', async () => {
    const cases: [string, FlowSpec][] = [
      ['EMQ_BAD_OPTION', { queue: a, payload: {}, children: [{ queue: b, payload: {}, key: 'k' }, { queue: b, payload: {}, key: 'k' }] }],
      ['EMQ_BAD_OPTION', { queue: a, payload: {}, children: [{ queue: b, payload: {}, key: 'no spaces' }] }],
      ['EMQ_BAD_OPTION', { queue: a, payload: {}, children: [{ queue: b, payload: {}, onFailure: 'explode' as 'fail' }] }],
      ['EMQ_BAD_OPTION', { queue: a, payload: {}, children: [{ queue: b, payload: {}, attempts: 0 }] }],
      ['EMQ_BAD_ID', { queue: a, payload: {}, id: 'job123', children: [] }],
      ['EMQ_BAD_OPTION', { queue: a, payload: {}, children: 'nope' as unknown as FlowSpec[] }],
    ];
    for (const [code, spec] of cases) await refusedUnchanged(f.raw, a, code, () => f.queues.flow(spec), both);
    // flowMany: one bad spec refuses the whole call.
    await refusedUnchanged(f.raw, a, 'EMQ_FLOW_CYCLE', async () => {
      const loop: { queue: string; payload: Record<string, never>; children: FlowSpec[] } = { queue: a, payload: {}, children: [] };
      loop.children.push(loop);
      return f.queues.flowMany([{ queue: a, payload: {} }, loop]);
    }, both);
  });
});

describe('flows: idempotent creation', () => {
  it('a flow with caller-given ids created twice exists once and runs its parent once', async () => {
    const [p, c] = [randomQueue('ip'), randomQueue('ic')];
    let parentRuns = 0;
    let childRuns = 0;
    const spec: FlowSpec = {
      queue: p,
      id: f.queues.mintId(),
      payload: { root: true },
      children: [
        { queue: c, id: f.queues.mintId(), payload: {} },
        { queue: p, id: f.queues.mintId(), payload: {} },
      ],
    };
    const one = await f.queues.flow(spec);
    const two = await f.queues.flow(spec);
    expect(two).toEqual(one);
    for (const q of [p, c]) {
      const { consumer } = await startConsumer(f.conn, q, (job) => {
        if ((job.payload as { root?: boolean }).root) parentRuns++;
        else childRuns++;
        return null;
      });
      f.consumers.push(consumer);
    }
    await eventually(async () => (await f.queues.getJob(p, one.id))?.status === 'done', 10_000, 'the parent to run');
    await new Promise((r) => setTimeout(r, 300));
    expect({ parentRuns, childRuns }).toEqual({ parentRuns: 1, childRuns: 2 });
  });
});
