import { CoordinationLostError } from '../../src/core/errors.js';
import { campaignPollMs, resolveElectionOptions, resolveLeaseOptions, resolveSemaphoreOptions, resolveServiceOptions, waitPollMs } from '../../src/coordination/coordination-options.js';
import { Keeper } from '../../src/coordination/keeper.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const silent = { warn: () => undefined, error: () => undefined };

describe('coordination: the keeper of a lease (local deadline, renewals, signal)', () => {
  const keepers: Keeper[] = [];
  afterEach(() => {
    for (const k of keepers.splice(0)) k.lose('test over');
  });
  const keeper = (ttl: number, renew: () => Promise<boolean>, auto = true, sentAt = Date.now(), onExpired: () => void = () => undefined): Keeper => {
    const k = new Keeper('lease "t"', ttl, sentAt, renew, silent, auto, onExpired);
    keepers.push(k);
    return k;
  };

  it('renews every ttl/3 while renewals succeed, and stays live past its ttl', async () => {
    let calls = 0;
    const k = keeper(300, async () => {
      calls++;
      return true;
    });
    await sleep(700);
    expect(k.signal.aborted).toBe(false);
    expect(calls).toBeGreaterThanOrEqual(4); // 7 on an idle machine; fewer when the test runner is busy
    expect(calls).toBeLessThanOrEqual(7);
    expect(k.localDeadline).toBeGreaterThan(Date.now());
  });

  it('aborts with EMQ_LEASE_LOST when a renewal is refused, and renews no more', async () => {
    let calls = 0;
    const k = keeper(150, async () => {
      calls++;
      return false;
    });
    await sleep(120);
    expect(k.signal.aborted).toBe(true);
    expect(k.signal.reason).toBeInstanceOf(CoordinationLostError);
    expect((k.signal.reason as CoordinationLostError).code).toBe('EMQ_LEASE_LOST');
    expect((k.signal.reason as Error).message).toMatch(/refused/);
    await sleep(150);
    expect(calls).toBe(1);
    expect(await k.renew()).toBe(false);
    expect(calls).toBe(1);
  });

  it('aborts at the local deadline when renewals fail (an outage), and calls onExpired once', async () => {
    let expired = 0;
    const k = keeper(
      200,
      async () => {
        throw new Error('ECONNREFUSED');
      },
      true,
      Date.now(),
      () => expired++,
    );
    const at = await new Promise<number>((resolve) => k.signal.addEventListener('abort', () => resolve(Date.now())));
    expect((k.signal.reason as Error).message).toMatch(/deadline/);
    await sleep(50);
    expect(expired).toBe(1);
    expect(at).toBeGreaterThan(0);
  });

  it('the deadline counts from the send time of the last successful renewal, not its reply', async () => {
    // A renewal whose reply takes 150 ms of a 300 ms ttl: the deadline is send + 300.
    const k = keeper(300, async () => {
      await sleep(150);
      return true;
    }, false);
    const sent = Date.now();
    expect(await k.renew()).toBe(true);
    expect(k.localDeadline).toBeGreaterThanOrEqual(sent + 300);
    expect(k.localDeadline).toBeLessThan(sent + 330);
  });

  it('reading the signal checks the clock: a deadline already past aborts it on the spot (a process resumed after SIGSTOP)', () => {
    // Acquired "400 ms ago" with a 300 ms ttl: no timer has run yet, the read alone aborts.
    const k = keeper(300, async () => true, true, Date.now() - 400);
    expect(k.signal.aborted).toBe(true);
    expect(k.live).toBe(false);
  });

  it('lose() aborts once: the first reason wins and timers stop', async () => {
    let calls = 0;
    const k = keeper(150, async () => {
      calls++;
      return true;
    });
    k.lose('released');
    k.lose('again');
    expect((k.signal.reason as Error).message).toMatch(/released$/);
    await sleep(200);
    expect(calls).toBe(0);
  });
});

describe('coordination options', () => {
  it('polls a wait every ttl/10 within 50..500 ms, and a campaign every min(ttl/4, 500) ms', () => {
    expect([waitPollMs(100), waitPollMs(1000), waitPollMs(3000), waitPollMs(60_000)]).toEqual([50, 100, 300, 500]);
    expect([campaignPollMs(100), campaignPollMs(1000), campaignPollMs(5000)]).toEqual([25, 250, 500]);
  });

  it('defaults autoRenew to true and waitMs to 0; elections to a 5000 ms ttl', () => {
    expect(resolveLeaseOptions({ ttlMs: 1000 })).toEqual({ ttlMs: 1000, autoRenew: true, waitMs: 0, signal: undefined, limit: 1 });
    expect(resolveSemaphoreOptions({ limit: 3, ttlMs: 1000, autoRenew: false })).toMatchObject({ limit: 3, autoRenew: false });
    expect(resolveElectionOptions(undefined).ttlMs).toBe(5000);
    expect(resolveElectionOptions({ ttlMs: undefined }).ttlMs).toBe(5000);
  });

  it('refuses unknown keys and out-of-range values with EMQ_BAD_OPTION naming them', () => {
    expect(() => resolveLeaseOptions({ ttlMs: 1000, ttl: 3 } as never)).toThrow(/unknown lease options: ttl/);
    expect(() => resolveLeaseOptions({ ttlMs: 50 })).toThrow(/ttlMs must be an integer in 100\.\.3600000/);
    expect(() => resolveSemaphoreOptions({ limit: 100_001, ttlMs: 1000 })).toThrow(/limit/);
    expect(() => resolveElectionOptions({ onElected: 5 } as never)).toThrow(/onElected/);
    expect(() => resolveServiceOptions({ owner: 'a b' })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
  });

  it('gives a default owner of printable ASCII within 48 bytes, distinct per service', () => {
    const a = resolveServiceOptions(undefined).owner;
    const b = resolveServiceOptions({}).owner;
    expect(a).toMatch(/^[A-Za-z0-9_-]{1,20}\.\d+\.[0-9a-f]{8}$/);
    expect(a.length).toBeLessThanOrEqual(48);
    expect(a).not.toBe(b);
  });
});
