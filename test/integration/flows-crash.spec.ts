import type { FlowSpec } from '../../src/queue/flows/flow-types.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { spawnFixture, type ChildHandle } from '../helpers/child.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

const f = queueFixture();

afterAll(async () => {
  await f.queues?.flows.close();
});

/** Spawns a flow-child whose relay stops for good at `hold` (the env var reaches the child only). */
function spawnHeld(hold: 'before-relay' | 'before-ack', args: string[]): ChildHandle {
  return spawnFixture('flow-child', [testUrl(), ...args], { ECHOMQ_TEST_RELAY_HOLD: hold });
}

/** Consumers in this process on each queue; counts runs per job id and records what parents saw. */
async function recover(queues: readonly string[]): Promise<{ runs: Map<string, number>; parentSaw: number[] }> {
  const runs = new Map<string, number>();
  const parentSaw: number[] = [];
  for (const q of queues) {
    const { consumer } = await startConsumer(f.conn, q, async (job) => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      if ((job.payload as { root?: boolean }).root) parentSaw.push((await f.queues.flows.children(q, job.id)).list.length);
      return { by: job.id };
    }, { concurrency: 4, leaseMs: 2000 });
    f.consumers.push(consumer);
    f.queues.flows.relay.watch(q);
  }
  return { runs, parentSaw };
}

describe('flows: a process killed mid-relay', () => {
  it('SIGKILLed after delivering a child\'s completion and before acknowledging it: the parent is released exactly once', async () => {
    const [p, c] = [randomQueue('kp'), randomQueue('kc')];
    const producer = new QueueService(f.conn);
    const flow = await producer.flow({ queue: p, payload: { root: true }, children: [0, 1, 2].map((i) => ({ queue: c, payload: { i } })) });
    for (const kid of flow.children) await eventually(async () => (await f.queues.getJob(c, kid.id))?.status === 'pending', 5000, 'the children to be created');
    await producer.flows.close(); // only the child process relays from here on

    const child = spawnHeld('before-ack', ['relay', c, '1000']);
    const [, held] = await child.waitForLine(/^relay-hold before-ack (\S+)$/);
    const heldIds = held.split(',');
    // The target script ran: the parent recorded those outcomes; the entries are still in the outbox.
    const row = await f.raw.hgetall(`emq:{${p}}:job:${flow.id}`);
    for (const e of heldIds) {
      expect(row[`r:${e.slice(2)}`]).toMatch(/^done /);
      expect(await f.raw.hexists(`emq:{${c}}:outbox`, e)).toBe(1);
    }
    child.signal('SIGKILL');
    await child.exited;

    const { runs, parentSaw } = await recover([p, c]);
    await eventually(async () => (await f.queues.getJob(p, flow.id))?.status === 'done', 20_000, 'the parent to run after recovery');
    await eventually(async () => (await f.raw.hlen(`emq:{${c}}:outbox`)) === 0, 5000, 'the replayed entries to be acknowledged');
    await new Promise((r) => setTimeout(r, 300));
    expect(runs.get(flow.id)).toBe(1);
    expect(parentSaw).toEqual([3]);
    expect(await f.raw.hlen(`emq:{${c}}:data`)).toBe(3);
    expect(await f.raw.hget(`emq:{${p}}:job:${flow.id}`, 'deps')).toBe('0');
  });

  it.each(['before-relay', 'before-ack'] as const)(
    'SIGKILLed while creating a flow (%s): every child exists once, the parent runs once',
    async (hold) => {
      const [p, c, d] = [randomQueue('cp'), randomQueue('cc'), randomQueue('cd')];
      const id = () => f.queues.mintId();
      const spec: FlowSpec = {
        queue: p,
        id: id(),
        payload: { root: true },
        children: [
          { queue: c, id: id(), payload: {} },
          { queue: c, id: id(), payload: {}, children: [{ queue: d, id: id(), payload: {} }] },
          { queue: d, id: id(), payload: {} },
          { queue: p, id: id(), payload: {} },
        ],
      };
      const child = spawnHeld(hold, ['create', JSON.stringify(spec), '1000']);
      await child.waitForLine(new RegExp(`^relay-hold ${hold} `));
      child.signal('SIGKILL');
      await child.exited;
      // The root and its same-queue child exist; the cross-queue creations are still owed.
      expect(await f.raw.hlen(`emq:{${p}}:outbox`)).toBe(3);

      const { runs, parentSaw } = await recover([p, c, d]);
      await eventually(async () => (await f.queues.getJob(p, spec.id!))?.status === 'done', 20_000, 'the root to run after recovery');
      // The dead relay's entries are replayed once their lease lapses: wait for that, then count.
      for (const q of [p, c, d]) await eventually(async () => (await f.raw.hlen(`emq:{${q}}:outbox`)) === 0, 10_000, 'the replays to be acknowledged');
      await new Promise((r) => setTimeout(r, 300));
      const all = [spec, ...spec.children!, ...spec.children![1].children!];
      for (const n of all) expect({ id: n.id, runs: runs.get(n.id!) }).toEqual({ id: n.id, runs: 1 });
      expect(parentSaw).toEqual([4]);
      expect(await f.raw.hlen(`emq:{${c}}:data`)).toBe(2);
      expect(await f.raw.hlen(`emq:{${d}}:data`)).toBe(2);
    },
  );
});
