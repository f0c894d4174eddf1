import { Redis } from 'iovalkey';
import { EchoMqConnection } from '../../src/protocol/connection.js';
import { globalKeys, queueKeys } from '../../src/protocol/keys.js';
import { keySlot } from '../../src/protocol/slot.js';
import type { Consumer } from '../../src/queue/consumer.js';
import type { Job } from '../../src/queue/job.js';
import { QueueService } from '../../src/queue/queue.service.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/testing/embedded-valkey.js';
import { startConsumer } from '../helpers/consumers.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

type Payload = { kind: 'ok' | 'fail' | 'hold'; n: number };

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
  let queues: QueueService;
  const consumers: Consumer[] = [];
  const gates = new Map<string, () => void>();
  const holding = new Set<string>();

  beforeAll(async () => {
    server = await startEmbeddedValkey({ cluster: true });
    node = new Redis({ host: server.host, port: server.port, maxRetriesPerRequest: 1 });
    conn = new EchoMqConnection({ cluster: [{ host: server.host, port: server.port }] });
    await conn.open();
    queues = new QueueService(conn);
  }, 30_000);
  afterAll(async () => {
    for (const release of gates.values()) release();
    await Promise.all(consumers.splice(0).map((c) => c.stop(2000)));
    await conn?.close();
    await node?.quit();
    await server?.stop();
  });

  const handler = async (job: Job<unknown>): Promise<unknown> => {
    const p = job.payload as Payload;
    if (p.kind === 'fail') throw new Error(`boom ${job.attempt}`);
    if (p.kind === 'hold') {
      holding.add(job.id);
      await new Promise<void>((r) => gates.set(job.id, r));
    }
    return { doubled: p.n * 2 };
  };

  /** Runs the whole lifecycle of `q` through the cluster client; any CROSSSLOT would throw. */
  async function lifecycle(q: string): Promise<void> {
    const started = await startConsumer(conn, q, handler, { concurrency: 4, leaseMs: 1000, attempts: 2 });
    consumers.push(started.consumer);
    const statusOf = async (id: string) => (await queues.getJob(q, id))?.status;

    const one = await queues.enqueue<Payload>(q, { kind: 'ok', n: 1 });
    const many = await queues.enqueueMany<Payload>(q, [
      { payload: { kind: 'ok', n: 2 } },
      { payload: { kind: 'ok', n: 3 }, opts: { attempts: 5, backoff: { type: 'exponential', delayMs: 10 } } },
      { payload: { kind: 'ok', n: 4 }, opts: { delay: 200 } },
    ]);
    const delayed = await queues.enqueue<Payload>(q, { kind: 'ok', n: 5 }, { delay: 300 });
    const far = await queues.enqueue<Payload>(q, { kind: 'ok', n: 6 }, { delay: 3_600_000 });
    const failing = await queues.enqueue<Payload>(q, { kind: 'fail', n: 7 });
    const held = await queues.enqueue<Payload>(q, { kind: 'hold', n: 8 });
    // Idempotent enqueue with a minted id.
    const minted = queues.mintId();
    expect(await queues.enqueue<Payload>(q, { kind: 'ok', n: 9 }, { id: minted })).toBe(minted);
    expect(await queues.enqueue<Payload>(q, { kind: 'ok', n: 99 }, { id: minted })).toBe(minted);

    expect(await statusOf(far)).toBe('scheduled');
    expect(await queues.cancel(q, far)).toBe('cancelled');
    expect(await statusOf(far)).toBe('cancelled');

    const oks = [one, ...many, delayed, minted];
    await eventually(async () => {
      const s = await Promise.all([...oks, failing].map(statusOf));
      return s.every((x, i) => x === (i < oks.length ? 'done' : 'dead'));
    }, 20_000, `the jobs of ${q} to finish`);

    // The held job's lease is extended while it runs (extend through the cluster client), and a
    // cancel only flags it.
    await eventually(() => holding.has(held), 10_000, 'the held job to start');
    const active = queueKeys(q).active;
    const firstDeadline = Number(await node.zscore(active, held));
    expect(firstDeadline).toBeGreaterThan(0);
    await eventually(async () => Number(await node.zscore(active, held)) > firstDeadline, 10_000, 'the held lease to be extended');
    expect(await queues.cancel(q, held)).toBe('flagged');
    expect((await queues.getJob(q, held))?.cancelRequested).toBe(true);
    gates.get(held)?.();
    await eventually(async () => (await statusOf(held)) === 'done', 10_000, 'the held job to complete');
    expect(await queues.cancel(q, one)).toBe('finished');
    expect(await queues.cancel(q, queues.mintId())).toBe('missing');

    const done = await queues.getJob<Payload, { doubled: number }>(q, minted);
    expect(done).toMatchObject({ status: 'done', attempts: 1, payload: { kind: 'ok', n: 9 }, result: { doubled: 18 } });
    const dead = await queues.getJob(q, failing);
    expect(dead).toMatchObject({ status: 'dead', attempts: 2 });
    expect(dead?.error).toContain('boom 2');
    expect((await queues.getJob(q, held))?.attempts).toBe(1);
    expect(await queues.counts(q)).toEqual({
      scheduled: 0,
      pending: 0,
      active: 0,
      done: oks.length + 1,
      dead: 1,
      cancelled: 1,
    });
    expect(started.log.warnings).toEqual([]);
    expect(started.log.errors).toEqual([]);
  }

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
    await lifecycle('orders');
    await lifecycle(other);
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
