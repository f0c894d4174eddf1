/**
 * Issue 7 #19: `maxmemory-policy allkeys-*` may evict any key — queue rows, their fencing counter,
 * the bus log — so EchoMQ refuses it at startup (EMQ_EVICTION_POLICY) unless told it is a
 * cache-only deployment; `volatile-*` only evicts keys with a TTL (none of the queue's or the
 * bus's), so it starts with a warning. Each case runs its own valkey-server.
 */
import { Redis } from 'iovalkey';
import { EchoMqConnection, type ValkeyConnectionOptions } from '../../src/protocol/connection.js';
import { EchoMqError } from '../../src/protocol/errors.js';
import { queueKeys } from '../../src/protocol/keys.js';
import { QueueService } from '../../src/queue/queue.service.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/testing/embedded-valkey.js';
import { aclUser } from '../helpers/acl.js';
import { eventually, queueKeysIn, randomQueue } from '../helpers/valkey.js';

describe('the eviction policy check', () => {
  const servers: EmbeddedValkey[] = [];
  const conns: EchoMqConnection[] = [];
  const raws: Redis[] = [];
  afterEach(async () => {
    for (const c of conns.splice(0)) await c.close();
    for (const r of raws.splice(0)) r.disconnect();
    for (const s of servers.splice(0)) await s.stop();
  });

  /** A server with `policy` (and a maxmemory, so the policy means something) and an admin client. */
  async function server(policy: string, maxmemory = '64mb'): Promise<{ port: number; raw: Redis }> {
    const s = await startEmbeddedValkey({ args: ['--maxmemory-policy', policy, '--maxmemory', maxmemory] });
    servers.push(s);
    const raw = new Redis({ port: s.port });
    raws.push(raw);
    return { port: s.port, raw };
  }

  /** Opens a connection; resolves to it and the warnings it logged. */
  async function open(o: ValkeyConnectionOptions): Promise<{ conn: EchoMqConnection; warnings: string[] }> {
    const conn = new EchoMqConnection(o);
    conns.push(conn);
    const warnings: string[] = [];
    conn.logger = { warn: (m) => warnings.push(m) };
    await conn.open();
    return { conn, warnings };
  }

  const refusal = (p: Promise<unknown>): Promise<EchoMqError> =>
    p.then(
      () => {
        throw new Error('expected a refusal');
      },
      (e: unknown) => e as EchoMqError,
    );

  it.each(['allkeys-lru', 'allkeys-lfu', 'allkeys-random'])('refuses %s at startup with EMQ_EVICTION_POLICY, before claiming a node', async (policy) => {
    const { port, raw } = await server(policy);
    const err = await refusal(open({ port }));
    expect(err).toBeInstanceOf(EchoMqError);
    expect([err.code, err.name]).toEqual(['EMQ_EVICTION_POLICY', 'EvictionPolicyError']);
    expect(err.message).toContain(`maxmemory-policy is ${policy}`);
    expect(err.message).toContain('allowEvictingPolicy');
    expect(await raw.keys('*')).toEqual([]);
  });

  it('reads the policy through INFO, so a restricted ACL user is checked too (CONFIG GET is denied to it)', async () => {
    const { port, raw } = await server('allkeys-lru');
    const user = await aclUser(raw, ['~emq:{orders}:*', '~{emq}:*', '&emq:{orders}:*', '-@all', '+@read', '+@write', '+@scripting', '+@connection', '+info', '+time']);
    const err = await refusal(open({ port, username: user.username, password: user.password }));
    expect(err.code).toBe('EMQ_EVICTION_POLICY');
  });

  it('starts under allkeys-* with the opt-out, and says what it risks', async () => {
    const { port } = await server('allkeys-lru');
    const { conn, warnings } = await open({ port, allowEvictingPolicy: true });
    expect(conn.node).toBeGreaterThanOrEqual(0);
    expect(warnings).toEqual(['maxmemory-policy is allkeys-lru: EchoMQ data may be evicted (allowed by allowEvictingPolicy)']);
  });

  it('starts under volatile-lru with one warning naming what it may evict', async () => {
    const { port } = await server('volatile-lru');
    const { conn, warnings } = await open({ port });
    await new QueueService(conn).enqueue(randomQueue('v'), { n: 1 });
    expect(warnings).toEqual([
      'maxmemory-policy is volatile-lru: under memory pressure Valkey may evict cache entries, cache tombstones, cache fill leases and cache tag indexes (queue and bus data carry no TTL and stay)',
    ]);
  });

  it('starts under noeviction without a word', async () => {
    const { port } = await server('noeviction');
    const { warnings } = await open({ port });
    expect(warnings).toEqual([]);
  });

  it('checks again after a reconnect: a policy changed at runtime to allkeys-* is reported', async () => {
    const { port, raw } = await server('noeviction');
    const { warnings } = await open({ port });
    await raw.config('SET', 'maxmemory-policy', 'allkeys-lru');
    await raw.call('CLIENT', ['KILL', 'TYPE', 'normal', 'SKIPME', 'yes']);
    await eventually(() => warnings.length > 0, 10_000, 'the re-check after the reconnect');
    expect(warnings[0]).toMatch(/^after a reconnect: EMQ_EVICTION_POLICY maxmemory-policy is allkeys-lru/);
  });

  /** Enqueues 300 jobs, then writes filler keys until about 4x maxmemory went in (or writes are refused). */
  async function fillAfterJobs(port: number, raw: Redis, q: string, allowEvictingPolicy: boolean): Promise<{ ids: string[]; queues: QueueService }> {
    const { conn } = await open({ port, allowEvictingPolicy });
    const queues = new QueueService(conn);
    const ids: string[] = [];
    for (let i = 0; i < 300; i++) ids.push(await queues.enqueue(q, { i, pad: 'p'.repeat(500) }));
    expect((await queues.counts(q)).pending).toBe(300);
    const filler = 'f'.repeat(1000);
    for (let i = 0; i < 8000; i++) {
      const ok = await raw.set(`filler:${i}`, filler).then(
        () => true,
        () => false,
      );
      if (!ok) break;
    }
    return { ids, queues };
  }

  /** How many of `ids` the queue still knows. */
  async function found(queues: QueueService, q: string, ids: readonly string[]): Promise<number> {
    let n = 0;
    for (const id of ids) if ((await queues.getJob(q, id).catch(() => null)) !== null) n++;
    return n;
  }

  it('why: under allkeys-lru (the check opted out), filler keys evict acknowledged queue data', async () => {
    const { port, raw } = await server('allkeys-lru', '2mb');
    const q = randomQueue('evicted');
    const { ids, queues } = await fillAfterJobs(port, raw, q, true);
    const k = queueKeys(q);
    // The payloads, the pending list and the meta hash (with the fencing counter) are plain keys: evicted.
    const left = await raw.exists(k.data, k.pending, k.meta);
    expect(left).toBeLessThan(3);
    expect(await found(queues, q, ids)).toBeLessThan(ids.length);
  });

  it('and under volatile-lru the same filler is refused (OOM) while every queue key stays', async () => {
    const { port, raw } = await server('volatile-lru', '2mb');
    const q = randomQueue('kept');
    const { ids, queues } = await fillAfterJobs(port, raw, q, false);
    const k = queueKeys(q);
    expect(await raw.exists(k.data, k.pending, k.meta)).toBe(3);
    expect(await raw.hlen(k.data)).toBe(ids.length);
    expect(await found(queues, q, ids)).toBe(ids.length);
  });
});
