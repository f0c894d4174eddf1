import { coordinationFixture } from '../helpers/coordination.js';
import { eventually } from '../helpers/valkey.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('CoordinationService: counting semaphores', () => {
  const f = coordinationFixture();
  const { service, name } = f;

  it('a semaphore admits at most limit holders; a release or an expiry frees a permit', async () => {
    const n = name();
    const s = service();
    const p1 = (await s.semaphore(n, { limit: 2, ttlMs: 5000 }))!;
    const p2 = (await s.semaphore(n, { limit: 2, ttlMs: 5000 }))!;
    expect(p1.holder).not.toBe(p2.holder);
    expect(p1.holder.startsWith(s.owner + '.')).toBe(true);
    expect(await s.semaphore(n, { limit: 2, ttlMs: 5000 })).toBeNull();
    expect(await f.raw.zcard(`emq:{co:${n}}:sem`)).toBe(2);
    await p1.release();
    expect(p1.signal.aborted).toBe(true);
    const p3 = (await s.semaphore(n, { limit: 2, ttlMs: 300, autoRenew: false }))!;
    expect(p3).not.toBeNull();
    // p3 expires without renewals: its signal aborts at its deadline and its place is free again.
    await eventually(() => p3.signal.aborted, 1000, 'p3 to lapse');
    const p4 = await s.semaphore(n, { limit: 2, ttlMs: 5000, waitMs: 500 });
    expect(p4).not.toBeNull();
    expect(await p3.renew()).toBe(false);
    await p2.release();
    await p4!.release();
    expect(await f.raw.zcard(`emq:{co:${n}}:sem`)).toBe(0);
  });

  it('auto-renewed permits outlive their ttl; a waiter gets a permit when one is released', async () => {
    const n = name();
    const s = service();
    const p1 = (await s.semaphore(n, { limit: 1, ttlMs: 300 }))!;
    await sleep(800);
    expect(p1.signal.aborted).toBe(false);
    setTimeout(() => void p1.release(), 200);
    const t0 = Date.now();
    const p2 = await service().semaphore(n, { limit: 1, ttlMs: 300, waitMs: 2000 });
    expect(p2).not.toBeNull();
    expect(Date.now() - t0).toBeLessThan(800);
    await p2!.release();
  });
});
