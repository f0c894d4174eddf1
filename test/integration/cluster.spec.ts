import { Redis } from 'iovalkey';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { globalKeys, queueKeys } from '../../src/core/keys.js';
import { keySlot } from '../../src/core/slot.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { lifecycleRunner, type LifecycleRunner } from '../helpers/lifecycle.js';
import { randomQueue } from '../helpers/valkey.js';

/** Every key matching `pattern` on the (single) cluster node. */
async function scanAll(node: Redis, pattern: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    out.push(...keys);
  } while (cursor !== '0');
  return out.sort();
}

describe('startEmbeddedValkey({ cluster: true })', () => {
  // Regression: a lone node learns its own address only from a peer; unless it announces one,
  // CLUSTER SLOTS names the host "" and the cluster client finds no node to talk to.
  it('serves a cluster client: EchoMqConnection({ cluster }) opens and runs a script', async () => {
    const server = await startEmbeddedValkey({ cluster: true });
    const conn = new EchoMqConnection({ cluster: [{ host: server.host, port: server.port }], connectTimeoutMs: 3000 });
    try {
      await conn.open();
      expect(conn.node).toBeGreaterThanOrEqual(0);
      const id = await new QueueService(conn).enqueue(randomQueue('cl-open'), { n: 1 });
      expect(id).toMatch(/^job/);
    } finally {
      await conn.close();
      await server.stop();
    }
  }, 30_000);
});

describe('the slot law on a real Valkey in cluster mode', () => {
  let server: EmbeddedValkey;
  let conn: EchoMqConnection;
  let node: Redis;
  let runner: LifecycleRunner;

  beforeAll(async () => {
    server = await startEmbeddedValkey({ cluster: true });
    node = new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 1 });
    conn = new EchoMqConnection({ cluster: [{ host: server.host, port: server.port }] });
    await conn.open();
    runner = lifecycleRunner(conn);
  }, 30_000);
  afterAll(async () => {
    await runner?.close();
    await conn?.close();
    await node?.quit();
    await server?.stop();
  });

  /** Every existing key of `q`, and every key the grammar spells for it, answers `slot`. */
  async function assertOneSlot(q: string, slot: number): Promise<void> {
    const keys = await scanAll(node, `emq:{${q}}:*`);
    const k = queueKeys(q);
    // The lifecycle left rows and the done, dead, cancelled and meta keys behind.
    for (const must of [k.meta, k.done, k.dead, k.cancelled]) expect(keys).toContain(must);
    expect(keys.length).toBeGreaterThanOrEqual(5);
    const grammar = Object.values(k).filter((v): v is string => typeof v === 'string' && v.startsWith('emq:'));
    expect(grammar.length).toBeGreaterThanOrEqual(9);
    for (const key of [...keys, ...grammar]) {
      expect([key, Number(await node.cluster('KEYSLOT', key))]).toEqual([key, slot]);
      expect([key, keySlot(key)]).toEqual([key, slot]);
    }
  }

  const other = randomQueue('cl');

  it('runs the whole lifecycle of queue "orders" and of a random queue with no CROSSSLOT', async () => {
    await runner.run('orders');
    await runner.run(other);
  }, 60_000);

  it('every key of queue "orders" answers slot 105, by CLUSTER KEYSLOT and by keySlot()', async () => {
    await assertOneSlot('orders', 105);
    await assertOneSlot(other, Number(await node.cluster('KEYSLOT', other)));
    // The node-number leases live under the reserved {emq} tag, in one slot of their own.
    const globals = await scanAll(node, '{emq}:*');
    expect(globals.length).toBeGreaterThanOrEqual(1);
    const emqSlot = keySlot(globalKeys.nodeSeq);
    for (const key of globals) {
      expect([key, Number(await node.cluster('KEYSLOT', key))]).toEqual([key, emqSlot]);
    }
  });
});
