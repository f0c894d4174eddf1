import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { keySlot } from '../../src/core/slot.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startEmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, queueKeysIn, randomQueue } from '../helpers/valkey.js';

const f = queueFixture();

afterAll(async () => {
  await f.queues?.flows.close();
});

describe('flows: visibility, cancel and retention', () => {
  it('getJob shows a waiting parent\'s children and their states, and a child its parent; cancelling the parent cancels them', async () => {
    const [p, c, d] = [randomQueue('vp'), randomQueue('vc'), randomQueue('vd')];
    const flow = await f.queues.flow({ queue: p, payload: {}, children: [{ queue: c, key: 'one', payload: {} }, { queue: d, key: 'two', payload: {}, onFailure: 'ignore' }] });
    await eventually(async () => (await f.queues.getJob(d, flow.children[1].id)) !== null, 5000, 'the children to be created');
    const parent = await f.queues.getJob(p, flow.id);
    expect(parent).toMatchObject({ status: 'waiting', waitingFor: 2 });
    expect([...(parent?.children ?? [])].sort((x, y) => x.key.localeCompare(y.key))).toEqual([
      { id: flow.children[0].id, queue: c, key: 'one', policy: 'fail', status: 'pending' },
      { id: flow.children[1].id, queue: d, key: 'two', policy: 'ignore', status: 'pending' },
    ]);
    expect((await f.queues.getJob(c, flow.children[0].id))?.parent).toEqual({ queue: p, id: flow.id });

    expect(await f.queues.cancel(p, flow.id)).toBe('cancelled');
    for (const [q, kid] of [[c, flow.children[0]], [d, flow.children[1]]] as const) {
      await eventually(async () => (await f.queues.getJob(q, kid.id))?.status === 'cancelled', 5000, 'the children to be cancelled');
    }
    // Each child's cancel is reported back to the (cancelled) parent, which records it.
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.children?.every((k) => k.outcome === 'cancelled') === true, 5000, 'the outcomes to arrive');
    for (const q of [p, c, d]) await eventually(async () => (await f.raw.hlen(`emq:{${q}}:outbox`)) === 0, 5000, 'the outboxes to drain');
    expect((await f.queues.getJob(p, flow.id))?.status).toBe('cancelled');
  });

  it('a finished flow leaves nothing behind its rows: with keepDone 0 no row, payload or outbox entry remains', async () => {
    const [p, c] = [randomQueue('rp'), randomQueue('rc')];
    for (const q of [p, c]) {
      const { consumer } = await startConsumer(f.conn, q, () => 1, { keepDone: 0, concurrency: 4 });
      f.consumers.push(consumer);
    }
    const flows = await f.queues.flowMany(
      Array.from({ length: 20 }, () => ({ queue: p, payload: {}, children: [{ queue: c, payload: {} }, { queue: p, payload: {} }] })),
    );
    await eventually(async () => (await f.raw.hlen(`emq:{${p}}:data`)) === 0, 10_000, 'every flow to finish and be dropped');
    for (const q of [p, c]) await eventually(async () => (await f.raw.exists(`emq:{${q}}:outbox`, `emq:{${q}}:outdue`)) === 0, 5000, 'the outboxes to drain');
    expect(flows).toHaveLength(20);
    // Only the queues' own meta, a wake-up marker, `active` holding its anchor alone and the
    // consumers' stored metrics (expiring, docs/admin.md "Metrics") may remain.
    const left = [...(await queueKeysIn(f.raw, p)), ...(await queueKeysIn(f.raw, c))].filter(
      (k) => !k.endsWith(':meta') && !k.endsWith(':wake') && !k.endsWith(':active') && !k.endsWith(':parked') && !k.includes(':stats:'),
    );
    expect(left).toEqual([]);
    for (const q of [p, c]) expect((await f.queues.counts(q)).active).toBe(0);
  });
});

describe('flows on Valkey in cluster mode', () => {
  it('a flow over three queues of three different slots completes: no script touches two queues', async () => {
    const server = await startEmbeddedValkey({ cluster: true });
    const conn = new EchoMqConnection({ cluster: [{ host: server.host, port: server.port }] });
    await conn.open();
    const svc = new QueueService(conn);
    try {
      const qs = [randomQueue('ka'), randomQueue('kb'), randomQueue('kc')];
      expect(new Set(qs.map((q) => keySlot(`emq:{${q}}:meta`))).size).toBe(3);
      const ran: string[] = [];
      for (const q of qs) {
        const { consumer } = await startConsumer(conn, q, async (job) => {
          ran.push(q);
          const kids = await svc.flows.children<number>(q, job.id);
          return 1 + kids.list.reduce((s, k) => s + (k.result ?? 0), 0);
        });
        f.consumers.push(consumer);
      }
      const flow = await svc.flow({
        queue: qs[0],
        payload: {},
        children: [{ queue: qs[1], payload: {}, children: [{ queue: qs[2], payload: {} }, { queue: qs[0], payload: {} }] }, { queue: qs[2], payload: {} }],
      });
      await eventually(async () => (await svc.getJob(qs[0], flow.id))?.status === 'done', 15_000, 'the root to finish');
      expect((await svc.getJob(qs[0], flow.id))?.result).toBe(5);
      expect(ran).toHaveLength(5);
    } finally {
      await Promise.all(f.consumers.splice(0).map((c) => c.stop(1000)));
      await svc.flows.close();
      await conn.close();
      await server.stop();
    }
  }, 30_000);
});
