/**
 * Issue 7 #19: `maxmemory-policy allkeys-*` may evict any key — queue rows, their fencing counter,
 * the bus log — so EchoMQ refuses it at startup (EMQ_EVICTION_POLICY) unless told it is a
 * cache-only deployment; `volatile-*` only evicts keys with a TTL (none of the queue's or the
 * bus's), so it starts with a warning. Each case runs its own valkey-server.
 * Issue 35 #8b: after open the check runs again at every reconnect and every `evictionCheckMs`; a
 * policy turned `allkeys-*` is then logged as an error once per change and shown by
 * `connection.evictionPolicy`, never thrown, and a return to safety is logged once.
 */
import { Redis } from 'iovalkey';
import { EchoMqConnection, type ValkeyConnectionOptions } from '../../src/core/connection/connection.js';
import { EchoMqError, InvalidOptionError } from '../../src/core/errors.js';
import type { EvictionPolicyState } from '../../src/core/connection/eviction-policy.js';
import { queueKeys } from '../../src/core/keys.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
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

  /** Opens a connection; resolves to it, the warnings and errors it logged and the policy changes it notified. */
  async function open(o: ValkeyConnectionOptions): Promise<{ conn: EchoMqConnection; warnings: string[]; errors: string[]; changes: EvictionPolicyState[] }> {
    const conn = new EchoMqConnection(o);
    conns.push(conn);
    const warnings: string[] = [];
    const errors: string[] = [];
    const changes: EvictionPolicyState[] = [];
    conn.logger = { warn: (m) => warnings.push(m), error: (m) => errors.push(m) };
    conn.onEvictionPolicy((s) => changes.push(s));
    await conn.open();
    return { conn, warnings, errors, changes };
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

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** The run-time interval of these cases, and how long a change may take to be seen (~2 intervals). */
  const EVERY = 300;
  const WITHIN = 2 * EVERY + 300;

  it('checks again after a reconnect: a policy changed at runtime to allkeys-* is logged as an error', async () => {
    const { port, raw } = await server('noeviction');
    // No periodic check: only the reconnect can notice.
    const { conn, warnings, errors } = await open({ port, evictionCheckMs: 0 });
    await raw.config('SET', 'maxmemory-policy', 'allkeys-lru');
    await sleep(300);
    expect(errors).toEqual([]);
    await raw.call('CLIENT', ['KILL', 'TYPE', 'normal', 'SKIPME', 'yes']);
    await eventually(() => errors.length > 0, 10_000, 'the re-check after the reconnect');
    expect(errors).toEqual([expect.stringMatching(/^EMQ_EVICTION_POLICY maxmemory-policy is now allkeys-lru \(was noeviction\): Valkey may evict any key/)]);
    expect(conn.evictionPolicy).toMatchObject({ policies: ['allkeys-lru'], unsafe: true });
    expect(warnings).toEqual([]);
  });

  it('checks periodically: allkeys-lru set at run time is logged once and exposed, work goes on, and the way back is logged once', async () => {
    const { port, raw } = await server('noeviction');
    const { conn, warnings, errors, changes } = await open({ port, evictionCheckMs: EVERY });
    expect(conn.evictionPolicy).toEqual({ policies: ['noeviction'], unsafe: false, checkedAt: expect.any(Number) });
    await raw.config('SET', 'maxmemory-policy', 'allkeys-lru');
    await eventually(() => errors.length > 0, WITHIN, 'the periodic check to log the evicting policy');
    expect(errors[0]).toMatch(/^EMQ_EVICTION_POLICY maxmemory-policy is now allkeys-lru \(was noeviction\)/);
    expect(errors[0]).toContain('EchoMQ keeps running');
    expect(conn.evictionPolicy).toMatchObject({ policies: ['allkeys-lru'], unsafe: true });
    // Not once per tick; and the connection still serves work.
    await sleep(3 * EVERY);
    expect(errors).toHaveLength(1);
    expect(await new QueueService(conn).enqueue(randomQueue('risk'), { n: 1 })).toMatch(/^job/);
    await raw.config('SET', 'maxmemory-policy', 'noeviction');
    await eventually(() => warnings.length > 0, WITHIN, 'the periodic check to log the recovery');
    await sleep(3 * EVERY);
    expect(warnings).toEqual(['maxmemory-policy is noeviction again (was allkeys-lru): EchoMQ data is no longer at risk of eviction']);
    expect(errors).toHaveLength(1);
    expect(conn.evictionPolicy).toMatchObject({ policies: ['noeviction'], unsafe: false });
    expect(changes.map((c) => [c.policies, c.unsafe])).toEqual([
      [['allkeys-lru'], true],
      [['noeviction'], false],
    ]);
    // Closed: no more checks.
    await conn.close();
    await raw.config('SET', 'maxmemory-policy', 'allkeys-lfu');
    await sleep(3 * EVERY);
    expect(errors).toHaveLength(1);
  });

  it('notices a server restarted with allkeys-* at the reconnect, and a server that is down costs no warnings', async () => {
    const { port } = await server('noeviction');
    // `onlyReconnect` has no periodic check: only its reconnect can notice; `ticking` checks every 100 ms.
    const onlyReconnect = await open({ port, evictionCheckMs: 0 });
    const ticking = await open({ port, evictionCheckMs: 100 });
    await servers[0].stop();
    await sleep(1000);
    expect([ticking.warnings, ticking.errors, onlyReconnect.warnings, onlyReconnect.errors]).toEqual([[], [], [], []]);
    servers.push(await startEmbeddedValkey({ port, args: ['--maxmemory-policy', 'allkeys-random', '--maxmemory', '64mb'] }));
    await eventually(() => onlyReconnect.errors.length > 0, 15_000, 'the check after the reconnect to the restarted server');
    expect(onlyReconnect.errors).toEqual([expect.stringMatching(/^EMQ_EVICTION_POLICY maxmemory-policy is now allkeys-random \(was noeviction\)/)]);
    expect(onlyReconnect.conn.evictionPolicy?.unsafe).toBe(true);
  });

  it('checks every primary of a cluster client at run time', async () => {
    const s = await startEmbeddedValkey({ cluster: true, args: ['--maxmemory', '64mb'] });
    servers.push(s);
    const raw = new Redis({ port: s.port });
    raws.push(raw);
    const { conn, errors } = await open({ cluster: [{ host: s.host, port: s.port }], evictionCheckMs: EVERY });
    expect(conn.evictionPolicy).toMatchObject({ policies: ['noeviction'], unsafe: false });
    await raw.config('SET', 'maxmemory-policy', 'allkeys-lfu');
    await eventually(() => errors.length > 0, WITHIN, 'the periodic check of the cluster primary');
    expect(errors[0]).toMatch(/^EMQ_EVICTION_POLICY maxmemory-policy is now allkeys-lfu/);
  });

  it('warns once, and never throws, when the periodic check cannot read INFO (no +info grant)', async () => {
    const { port, raw } = await server('noeviction');
    const user = await aclUser(raw, ['~*', '&*', '+@all', '-info']);
    const { conn, warnings, errors } = await open({ port, username: user.username, password: user.password, evictionCheckMs: 100 });
    await sleep(600);
    expect(warnings).toEqual([expect.stringMatching(/^EchoMQ cannot read the server's maxmemory-policy \(EMQ_NOPERM .*\); grant \+info to check it$/)]);
    expect(errors).toEqual([]);
    expect(conn.evictionPolicy).toMatchObject({ policies: [], unsafe: false });
  });

  it.each([50, -1, 1.5, 3_600_001, '1000'])('refuses evictionCheckMs %p with EMQ_BAD_OPTION', (v) => {
    const make = () => new EchoMqConnection({ port: 1, evictionCheckMs: v as number });
    expect(make).toThrow(InvalidOptionError);
    expect(make).toThrow(/connection\.evictionCheckMs must be 0 or an integer in 100\.\.3600000/);
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
