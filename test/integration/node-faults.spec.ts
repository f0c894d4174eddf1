/**
 * Node numbers under faults, with real Valkey processes: a process never mints on a node number it
 * does not certainly hold (issue 7 #7, #18, #19).
 */
import { Redis } from 'iovalkey';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { queueKeys } from '../../src/core/keys.js';
import { parseId } from '../../src/core/ids.js';
import type { ScriptClient } from '../../src/core/scripts.js';
import { wire } from '../../src/core/wire/queue.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { killChildren, spawnFixture } from '../helpers/child.js';
import { eventually, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const asScripts = (r: Redis) => r as unknown as ScriptClient;

/** Enqueues batches until stopped; records every acknowledged id with the instant of its ack. */
function produce(queues: QueueService, queue: string) {
  const acked: { id: string; at: number }[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      try {
        const ids = await queues.enqueueMany(queue, Array.from({ length: 20 }, (_, i) => ({ payload: { i } })));
        const at = Date.now();
        for (const id of ids) acked.push({ id, at });
      } catch {
        await sleep(20); // refused or unavailable: not acknowledged, not counted
      }
    }
  })();
  return {
    acked,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

/** Ids of `ids` missing from the queue's data hash. */
async function missing(raw: Redis, queue: string, ids: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < ids.length; i += 1000) {
    const part = ids.slice(i, i + 1000);
    const got = await raw.hmget(queueKeys(queue).data, ...part);
    got.forEach((v, j) => v === null && out.push(part[j]));
  }
  return out;
}

describe('node numbers under faults', () => {
  const servers: EmbeddedValkey[] = [];
  const conns: EchoMqConnection[] = [];
  const raws: Redis[] = [];
  afterEach(async () => {
    await killChildren();
    await Promise.all(conns.splice(0).map((c) => c.close().catch(() => undefined)));
    for (const r of raws.splice(0)) r.disconnect();
    await Promise.all(servers.splice(0).map((s) => s.stop()));
  });

  it('Valkey restarted empty: a producer from before and one from after never share a number, and every acknowledged job is present', async () => {
    const first = await startEmbeddedValkey();
    servers.push(first);
    const a = new EchoMqConnection({ url: first.url, commandTimeoutMs: 2000 });
    conns.push(a);
    await a.open();
    const q = randomQueue('restart');
    const pa = produce(new QueueService(a), q);
    await eventually(() => pa.acked.length > 100, 5000, 'A producing');
    await servers.pop()!.stop(); // kill -9: the leases, the counter and the queue are gone
    const restartedAt = Date.now();
    const second = await startEmbeddedValkey({ port: first.port });
    servers.push(second);
    const b = new EchoMqConnection({ url: second.url });
    conns.push(b);
    const bOpensAt = Date.now();
    await b.open();
    const pb = produce(new QueueService(b), q);
    await eventually(() => pa.acked.some((x) => x.at > restartedAt) && pb.acked.length > 100, 10_000, 'both producing');
    await sleep(1500);
    await Promise.all([pa.stop(), pb.stop()]);

    const afterA = pa.acked.filter((x) => x.at > restartedAt).map((x) => x.id);
    const afterB = pb.acked.map((x) => x.id);
    const all = [...afterA, ...afterB];
    expect(afterA.length).toBeGreaterThan(0);
    // No id was acknowledged twice (to both producers), and none of them was dropped.
    expect(new Set(all).size).toBe(all.length);
    const raw = new Redis(second.url, { maxRetriesPerRequest: 1 });
    raws.push(raw);
    expect((await missing(raw, q, all)).length).toBe(0);
    expect(await raw.hlen(queueKeys(q).data)).toBe(all.length);
    // From the moment B holds its number, A never mints on it (ids A minted before the restart
    // and sent again after the reconnect carry A's old number and an older millisecond).
    expect(new Set(afterB.map((id) => parseId(id).node))).toEqual(new Set([b.node]));
    const shared = afterA.filter((id) => parseId(id).ms >= bOpensAt && parseId(id).node === b.node);
    expect(shared).toEqual([]);
  }, 40_000);

  it('a process stalled past its lease does not mint on the number it lost', async () => {
    const q = randomQueue('stall');
    const child = spawnFixture('node-child', [testUrl(), q, '1000']);
    const n = Number((await child.waitForLine(/^NODE (\d+)$/))[1]);
    await eventually(() => child.lines.filter((l) => l.startsWith('OK ')).length > 10, 5000, 'child producing');
    child.signal('SIGSTOP');
    await sleep(2500); // past the child's 1 s lease
    const raw = rawClient();
    raws.push(raw);
    // The lease is lost (expired, or gone as in a failover); another process takes the number.
    await raw.hdel('{emq}:nodes', String(n));
    await raw.del(`{emq}:node:${n}`);
    expect(await wire.node(asScripts(raw), 'intruder', 60_000, n)).toBe(n);
    const takenAt = Date.now();
    const before = child.lines.length;
    child.signal('SIGCONT');
    await eventually(() => child.lines.slice(before).filter((l) => l.startsWith('OK ')).length > 20, 10_000, 'child producing again');
    child.send('stop');
    await child.waitForLine(/^STOPPED$/);
    const ids = child.lines.filter((l) => l.startsWith('OK ')).map((l) => l.slice(3));
    const late = ids.filter((id) => parseId(id).ms >= takenAt);
    expect(late.length).toBeGreaterThan(0);
    expect(late.filter((id) => parseId(id).node === n)).toEqual([]);
    await raw.hdel('{emq}:nodes', String(n));
    await raw.del(`{emq}:node:${n}`);
  }, 30_000);

  it('under maxmemory-policy volatile-lru, filler keys with TTLs never evict a node lease', async () => {
    const v = await startEmbeddedValkey({ args: ['--maxmemory', '8mb', '--maxmemory-policy', 'volatile-lru'] });
    servers.push(v);
    const conn = new EchoMqConnection({ url: v.url });
    conns.push(conn);
    await conn.open();
    const n = conn.node;
    const raw = new Redis(v.url, { maxRetriesPerRequest: 1 });
    raws.push(raw);
    const filler = 'x'.repeat(1024);
    for (let i = 0; i < 24; i++) {
      const p = raw.pipeline();
      for (let j = 0; j < 1000; j++) p.set(`filler:${i}:${j}`, filler, 'PX', 3_600_000);
      await p.exec();
    }
    const evicted = Number(/evicted_keys:(\d+)/.exec(await raw.info('stats'))![1]);
    expect(evicted).toBeGreaterThan(10_000);
    // The number is still held: another owner is refused it, and the holder still renews it.
    expect(await wire.node(asScripts(raw), 'intruder', 60_000, n)).toBe(-1);
    expect(conn.node).toBe(n);
  }, 30_000);
});
