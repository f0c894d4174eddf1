import { CoordinationService, type LeaderTerm } from '../../src/index.js';
import { coordinationFixture } from '../helpers/coordination.js';
import { eventually } from '../helpers/valkey.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('CoordinationService: leader election', () => {
  const f = coordinationFixture();
  const { service, name } = f;

  it('elects one of several candidates; the others take over in turn as each leader stops, tokens rising', async () => {
    const role = name();
    const ttlMs = 3000;
    const candidates = [service(), service(), service()];
    const elections = candidates.map((s) => s.elect(role, { ttlMs }));
    const t1 = await Promise.race(elections.map((e) => e.elected()));
    await sleep(300);
    expect(elections.filter((e) => e.isLeader()).length).toBe(1);
    const first = elections.findIndex((e) => e.isLeader());
    expect(elections[first].term()).toBe(t1);
    expect(t1.role).toBe(role);
    const stopAt = Date.now();
    await elections[first].stop(); // resigns: the lease is released, another wins at its next poll
    expect(t1.signal.aborted).toBe(true);
    const rest = elections.filter((_, i) => i !== first);
    const t2 = await Promise.race(rest.map((e) => e.elected()));
    expect(Date.now() - stopAt).toBeLessThan(1500); // a poll interval (min(ttl/4, 500) = 500 ms), not the 3 s ttl
    expect(t2.token).toBeGreaterThan(t1.token);
    await expect(elections[first].elected()).rejects.toMatchObject({ code: 'EMQ_LEASE_LOST' });
    await Promise.all(rest.map((e) => e.stop()));
    expect((await service().read(role)).held).toBe(false);
  });

  it('a leader that stops renewing (its lease taken over the deadline) hands over within ttl + poll', async () => {
    const role = name();
    const ttlMs = 600;
    const a = service();
    const b = service();
    const ea = a.elect(role, { ttlMs });
    const ta = await ea.elected();
    const eb = b.elect(role, { ttlMs });
    await sleep(200);
    expect(eb.isLeader()).toBe(false);
    // As if A had stalled past its lease: expire it on the server, behind A's back.
    const at = Date.now();
    await f.raw.hset(`emq:{co:${role}}:lease`, 'exp', String(Date.now() - 1));
    const tb = await eb.elected();
    expect(Date.now() - at).toBeLessThan(ttlMs); // B's next poll (every 150 ms), not A's renewal
    expect(tb.token).toBeGreaterThan(ta.token);
    // A's next renewal is refused: its term ends; it campaigns again and does not win.
    await eventually(() => ta.signal.aborted, ttlMs + 500, "A's term to end");
    expect((ta.signal.reason as { code: string }).code).toBe('EMQ_LEASE_LOST');
    await sleep(300);
    expect(ea.isLeader()).toBe(false);
    expect(eb.isLeader()).toBe(true);
    await ea.stop();
    await eb.stop();
  });

  it('calls onElected on every win; a throwing onElected resigns the term and the campaign goes on', async () => {
    const role = name();
    const wins: LeaderTerm[] = [];
    const a = service();
    const ea = a.elect(role, {
      ttlMs: 400,
      onElected: (term) => {
        wins.push(term);
        if (wins.length === 1) throw new Error('boom');
      },
    });
    await eventually(() => wins.length >= 2, 3000, 'a second win after the failed one');
    expect(wins[0].signal.aborted).toBe(true);
    expect(wins[1].token).toBeGreaterThan(wins[0].token);
    expect(ea.term()).toBe(wins[1]);
    // resign() gives the role up; with no rival the campaign wins it back after two polls.
    await wins[1].resign();
    expect(ea.isLeader()).toBe(false);
    await eventually(() => wins.length >= 3, 3000, 'a win after the resign');
    await ea.stop();
    expect(ea.isLeader()).toBe(false);
  });

  it('refuses a second campaign for one role on one service, and mixing a role with a lease of the same name', async () => {
    const role = name();
    const a = service();
    const e = a.elect(role, { ttlMs: 1000 });
    expect(() => a.elect(role)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    // Its lease is the campaign's: the same service may not tryAcquire it (nor elect a name it holds).
    await expect(a.tryAcquire(role, { ttlMs: 1000 })).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION' });
    await e.stop();
    const again = a.elect(role); // after stop, allowed again
    await again.stop();
    const held = name();
    const l = (await a.tryAcquire(held, { ttlMs: 1000 }))!;
    expect(() => a.elect(held)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    await l.release();
    await a.elect(held).stop();
  });

  it('close() stops elections and releases permits', async () => {
    const s = new CoordinationService(f.conn);
    const role = name();
    const n = name();
    const e = s.elect(role, { ttlMs: 1000 });
    const t = await e.elected();
    const p = (await s.semaphore(n, { limit: 1, ttlMs: 1000 }))!;
    await s.close();
    expect(t.signal.aborted && p.signal.aborted).toBe(true);
    expect((await service().read(role)).held).toBe(false);
    expect(await f.raw.zcard(`emq:{co:${n}}:sem`)).toBe(0);
    expect(() => s.elect(name())).toThrow(expect.objectContaining({ code: 'EMQ_UNAVAILABLE' }));
  });
});
