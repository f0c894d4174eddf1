import { Redis } from 'iovalkey';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { startConsumer } from '../helpers/consumers.js';
import type { Consumer } from '../../src/queue/consumer/consumer.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

/** A flow of one parent and two children in another queue, run to its end on `conn`. */
async function runFlow(conn: EchoMqConnection, svc: QueueService, consumers: Consumer[]): Promise<{ parent: string; child: string }> {
  const [p, c] = [randomQueue('wp'), randomQueue('wc')];
  for (const q of [p, c]) consumers.push((await startConsumer(conn, q, () => 1)).consumer);
  const flow = await svc.flow({ queue: p, payload: {}, children: [{ queue: c, payload: {} }, { queue: c, payload: {} }] });
  await eventually(async () => (await svc.getJob(p, flow.id))?.status === 'done', 10_000, 'the parent to run');
  return { parent: p, child: c };
}

describe('flows: acknowledging relayed entries only once their effect reached a replica (waitReplicas)', () => {
  let primary: EmbeddedValkey;
  let replica: EmbeddedValkey | undefined;
  let conn: EchoMqConnection;
  let raw: Redis;
  const consumers: Consumer[] = [];

  beforeAll(async () => {
    primary = await startEmbeddedValkey();
    conn = new EchoMqConnection({ url: primary.url });
    await conn.open();
    raw = new Redis(primary.url, { maxRetriesPerRequest: 1 });
  }, 30_000);

  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((c) => c.stop(1000)));
  });

  afterAll(async () => {
    await conn?.close();
    raw?.disconnect();
    await replica?.stop();
    await primary?.stop();
  });

  it('without a replica the parent still runs, but the entries stay until a replica confirms', async () => {
    const svc = new QueueService(conn, undefined, undefined, { waitReplicas: 1, waitTimeoutMs: 20, leaseMs: 200, sweepMs: 100 });
    const { parent, child } = await runFlow(conn, svc, consumers);
    await new Promise((r) => setTimeout(r, 500)); // several leases and sweeps: replayed, never acknowledged
    // The creations were never acknowledged, but each left with its child's outcome (flow-deliver
    // drops a delivered child's creation entry in the same step); the deliveries stay.
    expect(await raw.hlen(`emq:{${parent}}:outbox`)).toBe(0);
    expect(await raw.hlen(`emq:{${child}}:outbox`)).toBe(2); // the deliveries
    await svc.flows.close();
  });

  it('with a replica attached, every entry is acknowledged', async () => {
    replica = await startEmbeddedValkey({ args: ['--replicaof', primary.host, String(primary.port)] });
    await eventually(async () => /connected_slaves:1/.test(await raw.info('replication')), 10_000, 'the replica to attach');
    const svc = new QueueService(conn, undefined, undefined, { waitReplicas: 1, waitTimeoutMs: 1000, leaseMs: 200, sweepMs: 100 });
    const { parent, child } = await runFlow(conn, svc, consumers);
    for (const q of [parent, child]) await eventually(async () => (await raw.hlen(`emq:{${q}}:outbox`)) === 0, 5000, 'the outbox to drain');
    await svc.flows.close();
  }, 30_000);
});
