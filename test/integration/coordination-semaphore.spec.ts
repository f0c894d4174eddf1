import type { Redis } from 'iovalkey';
import type { EchoMqConnection } from '../../src/core/connection/index.js';
import { CoordinationService } from '../../src/index.js';
import { eventually, openConnection, randomQueue, rawClient } from '../helpers/valkey.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('CoordinationService: counting semaphores', () => {
  let conn: EchoMqConnection;
  let raw: Redis;
  const services: CoordinationService[] = [];
  const names: string[] = [];
  const service = (): CoordinationService => {
    const s = new CoordinationService(conn);
    services.push(s);
    return s;
  };
  const name = (): string => {
    const n = randomQueue('co');
    names.push(n);
    return n;
  };

  beforeAll(async () => {
    conn = await openConnection();
    raw = rawClient();
  });
  afterAll(async () => {
    await Promise.all(services.map((s) => s.close()));
    if (names.length) await raw.del(...names.flatMap((n) => [`emq:{co:${n}}:lease`, `emq:{co:${n}}:sem`]));
    raw.disconnect();
    await conn.close();
  });

  it('a semaphore admits at most limit holders; a release or an expiry frees a permit', async () => {
    const n = name();
    const s = service();
    const p1 = (await s.semaphore(n, { limit: 2, ttlMs: 5000 }))!;
    const p2 = (await s.semaphore(n, { limit: 2, ttlMs: 5000 }))!;
    expect(p1.holder).not.toBe(p2.holder);
    expect(p1.holder.startsWith(s.owner + '.')).toBe(true);
    expect(await s.semaphore(n, { limit: 2, ttlMs: 5000 })).toBeNull();
    expect(await raw.zcard(`emq:{co:${n}}:sem`)).toBe(2);
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
    expect(await raw.zcard(`emq:{co:${n}}:sem`)).toBe(0);
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
