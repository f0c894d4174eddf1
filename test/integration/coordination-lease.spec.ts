import { CoordinationService } from '../../src/index.js';
import { CoordKeys, FENCE_CHECK_LUA, coordWire } from '../../src/protocol.js';
import { HeldLease, acquireLease } from '../../src/coordination/lease.js';
import type { ScriptClient } from '../../src/core/scripts.js';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { aclUser } from '../helpers/acl.js';
import { coordinationFixture } from '../helpers/coordination.js';
import { eventually, testUrl } from '../helpers/valkey.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const codeOf = (e: unknown): string | undefined => (e as { code?: string })?.code;

describe('CoordinationService: fenced leases', () => {
  const f = coordinationFixture();
  const { service, name } = f;

  it('acquires, refuses another owner, reads, renews and releases; the next acquire has a greater token', async () => {
    const a = service('alpha');
    const b = service('beta');
    const n = name();
    const la = (await a.tryAcquire(n, { ttlMs: 2000 }))!;
    expect(la).not.toBeNull();
    expect(la.owner).toBe('alpha');
    expect(typeof la.token).toBe('bigint');
    expect(la.token).toBeGreaterThan(BigInt(Date.now() - 60_000) * 1000n);
    expect(la.expiresAt.getTime()).toBeGreaterThan(Date.now());
    expect(await b.tryAcquire(n, { ttlMs: 2000 })).toBeNull();
    expect(await b.read(n)).toEqual({ held: true, owner: 'alpha', token: la.token, expiresAt: la.expiresAt });
    const before = la.expiresAt.getTime();
    await sleep(20);
    expect(await la.renew()).toBe(true);
    expect(la.expiresAt.getTime()).toBeGreaterThan(before);
    await la.release();
    expect(la.signal.aborted).toBe(true);
    expect(codeOf(la.signal.reason)).toBe('EMQ_LEASE_LOST');
    await la.release(); // idempotent
    expect(await la.renew()).toBe(false);
    const r = await b.read(n);
    expect(r).toEqual({ held: false, owner: '', token: la.token, expiresAt: null });
    const lb = (await b.tryAcquire(n, { ttlMs: 2000 }))!;
    expect(lb.token).toBeGreaterThan(la.token);
    await lb.release();
  });

  it('reads a name never held as free, with no token', async () => {
    expect(await service().read(name())).toEqual({ held: false, owner: '', token: null, expiresAt: null });
  });

  it('tokens only grow over many acquisitions by alternating owners', async () => {
    const a = service('alpha');
    const b = service('beta');
    const n = name();
    let last = 0n;
    for (let i = 0; i < 30; i++) {
      const l = (await (i % 2 ? a : b).tryAcquire(n, { ttlMs: 1000, autoRenew: false }))!;
      expect(l.token).toBeGreaterThan(last);
      last = l.token;
      await l.release();
    }
  });

  it('is re-entrant: a second tryAcquire by the holder answers the same Lease, same token, later expiry', async () => {
    const a = service();
    const n = name();
    const l1 = (await a.tryAcquire(n, { ttlMs: 1000 }))!;
    const exp1 = l1.expiresAt.getTime();
    await sleep(20);
    const l2 = (await a.tryAcquire(n, { ttlMs: 60_000 }))!;
    expect(l2).toBe(l1);
    expect(l2.token).toBe(l1.token);
    expect(l2.expiresAt.getTime()).toBeGreaterThan(exp1);
    // Renewed with its own ttl (1000), not the second call's: the server's expiry and the local deadline agree.
    expect(l2.expiresAt.getTime()).toBeLessThan(Date.now() + 2000);
    // Another service of the same owner string is the same owner on the server: re-entrant there too.
    const twin = service(a.owner);
    const l3 = (await twin.tryAcquire(n, { ttlMs: 1000 }))!;
    expect(l3.token).toBe(l1.token);
    await l1.release();
  });

  it('auto-renews every ttl/3: the lease outlives its ttl several times over', async () => {
    const a = service();
    const b = service();
    const n = name();
    const l = (await a.tryAcquire(n, { ttlMs: 300 }))!;
    await sleep(1100);
    expect(l.signal.aborted).toBe(false);
    expect(await b.tryAcquire(n, { ttlMs: 300 })).toBeNull();
    expect((await b.read(n)).token).toBe(l.token);
    await l.release();
  });

  it('without autoRenew the lease expires: the signal aborts at the local deadline, the next owner gets a greater token and the old renew is refused', async () => {
    const a = service();
    const b = service();
    const n = name();
    const l = (await a.tryAcquire(n, { ttlMs: 200, autoRenew: false }))!;
    const aborted = new Promise<number>((resolve) => l.signal.addEventListener('abort', () => resolve(Date.now())));
    const t0 = Date.now();
    const at = await aborted;
    expect(at - t0).toBeLessThan(600); // the 200 ms deadline, not a later renewal
    expect(codeOf(l.signal.reason)).toBe('EMQ_LEASE_LOST');
    const lb = (await b.tryAcquire(n, { ttlMs: 2000 }))!;
    expect(lb).not.toBeNull();
    expect(lb.token).toBeGreaterThan(l.token);
    expect(await l.renew()).toBe(false);
    await lb.release();
  });

  it('a refused renewal aborts the signal: a newer token took the name behind the holder', async () => {
    const a = service('alpha');
    const n = name();
    const l = (await a.tryAcquire(n, { ttlMs: 5000, autoRenew: false }))!;
    // As if the lease had expired during a pause and another owner had acquired it.
    const newer = (l.token + 1n).toString();
    await f.raw.hset(`emq:{co:${n}}:lease`, 'owner', 'beta', 'token', newer, 'fence', newer);
    expect(await l.renew()).toBe(false);
    expect(l.signal.aborted).toBe(true);
    expect(String((l.signal.reason as Error).message)).toMatch(/refused/);
    expect(codeOf(l.signal.reason)).toBe('EMQ_LEASE_LOST');
    await l.release(); // not ours any more: nothing changes on the server
    expect(await service().read(n)).toMatchObject({ held: true, owner: 'beta', token: BigInt(newer) });
  });

  it('waits up to waitMs for a held lease, and gets it once released', async () => {
    const a = service();
    const b = service();
    const n = name();
    const la = (await a.tryAcquire(n, { ttlMs: 5000 }))!;
    setTimeout(() => void la.release(), 300);
    const t0 = Date.now();
    const lb = await b.tryAcquire(n, { ttlMs: 5000, waitMs: 3000 });
    expect(lb).not.toBeNull();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(Date.now() - t0).toBeLessThan(1500);
    expect(lb!.token).toBeGreaterThan(la.token);
    const t1 = Date.now();
    expect(await a.tryAcquire(n, { ttlMs: 5000, waitMs: 300 })).toBeNull();
    expect(Date.now() - t1).toBeGreaterThanOrEqual(290);
    await lb!.release();
  });

  it('the caller signal stops a wait (null) and, once held, releases the lease', async () => {
    const a = service();
    const b = service();
    const n = name();
    const la = (await a.tryAcquire(n, { ttlMs: 5000 }))!;
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const t0 = Date.now();
    expect(await b.tryAcquire(n, { ttlMs: 5000, waitMs: 5000, signal: ac.signal })).toBeNull();
    expect(Date.now() - t0).toBeLessThan(1000);
    await la.release();
    const ac2 = new AbortController();
    const lb = (await b.tryAcquire(n, { ttlMs: 5000, signal: ac2.signal }))!;
    ac2.abort();
    await sleep(50);
    expect(lb.signal.aborted).toBe(true);
    expect((await a.read(n)).held).toBe(false);
  });

  it('close() releases every lease the service holds; later calls are refused', async () => {
    const a = new CoordinationService(f.conn);
    const n1 = name();
    const n2 = name();
    const l1 = (await a.tryAcquire(n1, { ttlMs: 5000 }))!;
    const l2 = (await a.tryAcquire(n2, { ttlMs: 5000 }))!;
    await a.close();
    expect(l1.signal.aborted && l2.signal.aborted).toBe(true);
    expect((await service().read(n1)).held).toBe(false);
    expect((await service().read(n2)).held).toBe(false);
    await expect(a.tryAcquire(n1, { ttlMs: 5000 })).rejects.toMatchObject({ code: 'EMQ_UNAVAILABLE' });
  });

  it('refuses bad names and options with a typed error, writing nothing', async () => {
    const a = service();
    const n = name();
    const bad: [string, unknown][] = [
      ['{x}', { ttlMs: 1000 }],
      ['', { ttlMs: 1000 }],
      ['a b', { ttlMs: 1000 }],
    ];
    for (const [nm, o] of bad) await expect(a.tryAcquire(nm, o as { ttlMs: number })).rejects.toMatchObject({ code: 'EMQ_BAD_NAME' });
    const badOpts: unknown[] = [undefined, null, {}, { ttlMs: 99 }, { ttlMs: 3_600_001 }, { ttlMs: 1.5 }, { ttlMs: Number.NaN }, { ttlMs: 1000, ttl: 5 }, { ttlMs: 1000, waitMs: -1 }, { ttlMs: 1000, autoRenew: 'yes' }, { ttlMs: 1000, signal: {} }];
    for (const o of badOpts) await expect(a.tryAcquire(n, o as { ttlMs: number })).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION' });
    await expect(a.semaphore(n, { limit: 0, ttlMs: 1000 })).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION' });
    await expect(a.semaphore(n, { limit: 2, ttlMs: 1000, max: 3 } as never)).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION' });
    expect(() => a.elect(n, { ttlMs: 50 })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(() => a.elect(n, { tll: 5 } as never)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(() => a.elect('..', {})).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    expect(() => new CoordinationService(f.conn, { owner: 'has space' })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(() => new CoordinationService(f.conn, { owner: 'x'.repeat(49) })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(() => new CoordinationService(f.conn, { ownr: 'x' } as never)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(await f.raw.exists(`emq:{co:${n}}:lease`, `emq:{co:${n}}:sem`)).toBe(0);
  });

  it('FENCE_CHECK_LUA refuses a lower token and accepts an equal or higher one', async () => {
    const n = name();
    const fence = `emq:{co:${n}}:fence`;
    const run = (t: bigint) => f.raw.eval(FENCE_CHECK_LUA, 1, fence, t.toString());
    const a = service();
    const b = service();
    const la = (await a.tryAcquire(n, { ttlMs: 1000 }))!;
    await la.release();
    const lb = (await b.tryAcquire(n, { ttlMs: 1000 }))!;
    await run(lb.token);
    await run(lb.token);
    await expect(run(la.token)).rejects.toThrow(/EMQ_STALE_TOKEN/);
    expect(await f.raw.get(fence)).toBe(lb.token.toString());
    await lb.release();
  });

  it('a lease whose acquire answered after its own deadline is born lost: signal aborted, released on the server, bookkeeping told', async () => {
    const n = name();
    const keys = new CoordKeys(n);
    const r = await coordWire.lease(f.conn.scriptClient, keys, 'acquire', 'slow', null, 1000);
    let ended = 0;
    const hold = { ttlMs: 1000, autoRenew: true, waitMs: 0, limit: 1 };
    const l = new HeldLease(f.conn.scriptClient, keys, 'slow', r.token!, r.exp, Date.now() - 5000, hold, { warn: () => undefined, error: () => undefined }, () => ended++);
    expect(l.signal.aborted).toBe(true);
    await sleep(50);
    expect(ended).toBe(1);
    expect(await service().read(n)).toMatchObject({ held: false, owner: '', token: r.token });
  });

  it('works under the least-privilege grant of docs/operations.md (base + ~emq:{co:<name>}:*), and a name outside it is EMQ_NOPERM', async () => {
    const n = name();
    const other = name();
    const BASE = ['~{emq}:*', '-@all', '+@read', '+@write', '+@blocking', '+@pubsub', '-@dangerous', '-function', '+evalsha', '+eval', '+info', '+time', '+auth', '+hello', '+ping', '+quit', '+select', '+client|setname', '+client|id', '+client|unblock'];
    const u = await aclUser(f.raw, [...BASE, `~emq:{co:${n}}:*`]);
    const c = new EchoMqConnection({ url: testUrl(), username: u.username, password: u.password });
    await c.open();
    const s = new CoordinationService(c);
    try {
      const l = (await s.tryAcquire(n, { ttlMs: 1000 }))!;
      expect(await l.renew()).toBe(true);
      const p = (await s.semaphore(n, { limit: 1, ttlMs: 1000 }))!;
      expect(await p.renew()).toBe(true);
      expect((await s.read(n)).held).toBe(true);
      await p.release();
      await l.release();
      await expect(s.tryAcquire(other, { ttlMs: 1000 })).rejects.toMatchObject({ code: 'EMQ_NOPERM' });
    } finally {
      await s.close();
      await c.close();
      await u.drop();
    }
  });

  it('an acquire answered after its ttl (a stalled client) is not handed out: null, and the lease is free again', async () => {
    const n = name();
    const keys = new CoordKeys(n);
    const real = f.conn.scriptClient;
    // A real Valkey behind a client that delivers each reply 400 ms late.
    const slow: ScriptClient = {
      evalsha: async (...a) => {
        const r = await real.evalsha(...a);
        await sleep(400);
        return r;
      },
      eval: (...a) => real.eval(...a),
      pipeline: () => real.pipeline(),
    };
    const hold = { ttlMs: 300, autoRenew: true, waitMs: 0, limit: 1 };
    const got = await acquireLease(slow, keys, 'stalled', hold, { warn: () => undefined, error: () => undefined }, () => undefined);
    expect(got).toBeNull();
    await eventually(async () => !(await service().read(n)).held, 2000, 'the born-lost lease to be released');
    expect((await service().read(n)).owner).toBe('');
  });
});
