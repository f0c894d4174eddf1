import type { FlowSpec } from '../../src/queue/flows/flow-types.js';
import { encodeFlow, planQueue } from '../../src/queue/flows/flow-plan.js';
import { DEFAULT_FLOW_BOUNDS } from '../../src/queue/flows/flow-types.js';
import { flowWire } from '../../src/core/wire/index.js';
import { queueKeys } from '../../src/core/keys.js';
import { EchoMqError } from '../../src/core/errors.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { refusedUnchanged } from '../helpers/refusals.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const f = queueFixture();

afterAll(async () => {
  await f.queues?.flows.close();
});

/** The error `act` rejects with (an EchoMqError), for its code and message. */
async function refusal(act: () => Promise<unknown>): Promise<EchoMqError> {
  try {
    await act();
  } catch (err) {
    if (err instanceof EchoMqError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('flows: every flow-node option is validated (unknown keys and misspelt values refused, nothing written)', () => {
  const a = randomQueue('va');
  const b = randomQueue('vb');
  const both = [`emq:{${a}}:*`, `emq:{${b}}:*`];
  const kid = { queue: b, payload: {} };

  it.each([
    ['BullMQ name', { name: 'step' }, 'flow.children[2].name'],
    ['group (renamed lane)', { group: 'tenant-1' }, 'flow.children[2].group'],
    ['delayMs (the enqueue option is delay)', { delayMs: 60_000 }, 'flow.children[2].delayMs'],
    ['BullMQ opts', { opts: { attempts: 3, failParentOnFailure: true } }, 'flow.children[2].opts'],
    ['a misspelt key', { onfailure: 'ignore' }, 'flow.children[2].onfailure'],
  ])('refuses %s on a node with EMQ_BAD_OPTION naming its path', async (_what, extra, path) => {
    const spec = { queue: a, payload: {}, children: [kid, kid, { ...kid, ...extra }] } as unknown as FlowSpec;
    const err = await refusal(() => f.queues.flow(spec));
    expect(err.code).toBe('EMQ_BAD_OPTION');
    expect(err.message).toContain(path);
    await refusedUnchanged(f.raw, a, 'EMQ_BAD_OPTION', () => f.queues.flow(spec), both);
  });

  it('refuses misspelt enum values and unknown backoff keys, and names the flow of a flowMany', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ onFailure: 'Ignore' }, 'flow.children[0].onFailure'],
      [{ backoff: { type: 'Fixed', delayMs: 10 } }, 'flow.children[0]'],
      [{ backoff: { type: 'fixed', delay: 10 } }, 'flow.children[0].backoff.delay'],
      [{ attempts: 1.5 }, 'flow.children[0]'],
    ];
    for (const [extra, path] of cases) {
      const spec = { queue: a, payload: {}, children: [{ ...kid, ...extra }] } as unknown as FlowSpec;
      const err = await refusal(() => f.queues.flow(spec));
      expect([err.code, err.message]).toEqual(['EMQ_BAD_OPTION', expect.stringContaining(path)]);
    }
    const nested = { queue: a, payload: {}, children: [{ ...kid, children: [{ ...kid, opts: {} }] }] } as unknown as FlowSpec;
    const err = await refusal(() => f.queues.flowMany([{ queue: a, payload: {} }, nested]));
    expect(err.message).toContain('flows[1].children[0].children[0].opts');
    await refusedUnchanged(f.raw, a, 'EMQ_BAD_OPTION', () => f.queues.flowMany([{ queue: a, payload: {} }, nested]), both);
  });

  it('still accepts every documented option', async () => {
    const spec: FlowSpec = {
      queue: a,
      payload: {},
      id: f.queues.mintId(),
      children: [{ queue: b, payload: 1, key: 'k', onFailure: 'continue', attempts: 2, backoff: { type: 'fixed', delayMs: 5 }, children: [] }],
    };
    const node = await f.queues.flow(spec);
    expect(node.children[0].key).toBe('k');
  });
});

describe('flowMany: all or nothing for what can be checked', () => {
  const a = randomQueue('ma');
  const b = randomQueue('mb');
  const c = randomQueue('mc');
  const all = [`emq:{${a}}:*`, `emq:{${b}}:*`, `emq:{${c}}:*`];

  it('refuses the same id in two specs (of one queue, or of two) before writing either', async () => {
    const id = f.queues.mintId();
    const err = await refusal(() => f.queues.flowMany([{ queue: a, payload: {}, id }, { queue: a, payload: {}, id }]));
    expect([err.code, err.message]).toEqual(['EMQ_BAD_OPTION', expect.stringContaining('flows[1].id')]);
    await refusedUnchanged(f.raw, a, 'EMQ_BAD_OPTION', () => f.queues.flowMany([{ queue: b, payload: {} }, { queue: a, payload: {}, id }, { queue: c, payload: {}, children: [{ queue: a, payload: {}, id }] }]), all);
  });

  it('refuses a call when one root queue has no outbox room for its share, before writing any queue', async () => {
    const svc = new QueueService(f.conn, undefined, undefined, { outboxBound: 2 });
    try {
      const specs: FlowSpec[] = [
        { queue: a, payload: {}, children: [{ queue: b, payload: {} }] },
        { queue: c, payload: {}, children: [{ queue: b, payload: {} }, { queue: b, payload: {} }, { queue: b, payload: {} }] },
      ];
      await refusedUnchanged(f.raw, a, 'EMQ_FLOW_TOO_LARGE', () => svc.flowMany(specs), all);
    } finally {
      await svc.flows.close();
    }
  });
});

describe('flows: an id that exists already is EMQ_ID_COLLISION, never a stuck parent', () => {
  const a = randomQueue('ia');
  const b = randomQueue('ib');
  const both = [`emq:{${a}}:*`, `emq:{${b}}:*`];

  it('refuses a child id that exists in another queue, in the same queue, and a root id that exists', async () => {
    const inB = await f.queues.enqueue(b, { taken: true }, { id: f.queues.mintId() });
    const inA = await f.queues.enqueue(a, { taken: true }, { id: f.queues.mintId() });
    const specs: FlowSpec[] = [
      { queue: a, payload: {}, children: [{ queue: b, payload: {}, id: inB }] },
      { queue: a, payload: {}, children: [{ queue: a, payload: {}, id: inA }] },
      { queue: a, payload: {}, id: inA, children: [{ queue: b, payload: {} }] },
    ];
    for (const spec of specs) {
      const err = await refusal(() => f.queues.flow(spec));
      expect([err.code, err.message]).toEqual(['EMQ_ID_COLLISION', expect.stringMatching(/flow(\.children\[0\])?\.id/)]);
      await refusedUnchanged(f.raw, a, 'EMQ_ID_COLLISION', () => f.queues.flow(spec), both);
    }
    // flowMany: one colliding flow refuses all of them.
    await refusedUnchanged(f.raw, a, 'EMQ_ID_COLLISION', () => f.queues.flowMany([{ queue: b, payload: {} }, specs[0]]), both);
  });

  it('recovery: flowMany again with ids on every node replays the flows written and writes the rest', async () => {
    const [a, b] = [randomQueue('ra'), randomQueue('rb')];
    const node = (q: string, kids: FlowSpec[] = []): FlowSpec => ({ queue: q, payload: {}, id: f.queues.mintId(), children: kids });
    const one = node(a, [node(b), node(a)]);
    const two = node(b, [node(a)]);
    const first = await f.queues.flowMany([one]);
    await eventually(async () => (await f.queues.getJob(b, one.children![0].id!)) !== null, 5000, 'the child to be created');
    const again = await f.queues.flowMany([one, two]);
    expect(again[0]).toEqual(first[0]);
    expect((await f.queues.getJob(b, two.id!))?.status).toBe('waiting');
    expect(await f.raw.hlen(`emq:{${a}}:data`)).toBe(3); // one's root and same-queue child, two's child: nothing twice
    // A root re-created with minted (new) child ids is not a replay: a collision.
    const err = await refusal(() => f.queues.flow({ queue: a, payload: {}, id: one.id, children: [{ queue: b, payload: {} }, { queue: a, payload: {} }] }));
    expect(err.code).toBe('EMQ_ID_COLLISION');
  });

  it('a child id taken after the check (a race) fails the child at its parent instead of leaving the parent waiting', async () => {
    const taken = await f.queues.enqueue(b, { taken: true }, { id: f.queues.mintId() });
    // The parent's call as flow() would make it, written after the id was taken (no check ran).
    const tree = encodeFlow({ queue: a, payload: {}, children: [{ queue: b, payload: {}, id: taken }] }, DEFAULT_FLOW_BOUNDS, () => 1 << 20, () => f.queues.mintId());
    const plan = planQueue(a, [{ tree, up: '' }]);
    await flowWire.add(f.conn.scriptClient, queueKeys(a), 1 << 20, 100_000, plan.nodes, plan.edges);
    f.queues.flows.relay.watch(a);
    await eventually(async () => (await f.queues.getJob(a, tree.id))?.status === 'dead', 5000, 'the parent to fail');
    const parent = await f.queues.getJob(a, tree.id);
    expect(parent?.error).toContain('EMQ_ID_COLLISION');
    expect((await f.queues.getJob(b, taken))?.payload).toEqual({ taken: true });
    expect(await f.raw.hlen(`emq:{${a}}:outbox`)).toBe(0);
  });
});
