/**
 * Rate-limit windows (issue 37, item 2; docs/queue.md "Rate limits"): `window: 'sliding'` never
 * lets more than `max` claims start in any `intervalMs`-long span of the server clock, across
 * consumers in two processes; the fixed window's known burst (up to 2 × max around a window's
 * end) shown at the wire; the option's keys and values checked; the mode stored additively (a
 * call in the old form stores a fixed window); per-lane sliding windows.
 */
import { BUILTIN_DEFAULTS, resolveDefaults } from '../../src/unstable.js';
import { queueKeys } from '../../src/core/keys.js';
import { wire } from '../../src/core/wire/queue.js';
import { readPolicy, writePolicy } from '../../src/core/wire/policy.js';
import { PROTOCOL_VERSION, runScript } from '../../src/core/scripts.js';
import { lanePolicyWire, type PolicyOptions } from '../../src/queue/lane-policy.js';
import type { RateLimit } from '../../src/queue/base-options.js';
import { spawnFixture, type ChildHandle } from '../helpers/child.js';
import { startConsumer } from '../helpers/consumers.js';
import { codeOf } from '../helpers/refusals.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue, testUrl } from '../helpers/valkey.js';

const f = queueFixture();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The most claim instants (ms, any order) inside one half-open window [s, s + ms) of the given length. */
function mostInWindow(times: readonly number[], ms: number): number {
  const t = [...times].sort((x, y) => x - y);
  let most = 0;
  for (let i = 0, j = 0; i < t.length; i++) {
    while (t[i] - t[j] >= ms) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

/** The server-clock instant of every claimed job, from the queue's lifecycle log (meta `elog` set). */
async function claimTimes(q: string): Promise<number[]> {
  const out: number[] = [];
  for (const [, fields] of await f.raw.xrange(queueKeys(q).events, '-', '+')) {
    const m = new Map<string, string>();
    for (let i = 0; i < fields.length; i += 2) m.set(fields[i], fields[i + 1]);
    if (m.get('e') === 'claimed') for (const _ of (m.get('ids') ?? '').split(' ')) out.push(Number(m.get('at')));
  }
  return out;
}

/** The server's clock (ms). */
async function serverMs(): Promise<number> {
  const [s, us] = await f.raw.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

async function fill(q: string, n: number): Promise<void> {
  await f.queues.enqueueMany(q, Array.from({ length: n }, (_, i) => ({ payload: { g: '', i } })));
}

describe('a sliding window across two processes', () => {
  it('10/s: no 1 s window of the server clock holds more than 10 claims, over 6 s of saturation, and the limit is used', async () => {
    const q = randomQueue('slide');
    const k = queueKeys(q);
    await fill(q, 120);
    await f.queues.setPolicy(q, { rateLimit: { max: 10, intervalMs: 1000, window: 'sliding' } });
    await f.raw.hset(k.meta, 'elog', '100000'); // the lifecycle log: each claim's `claimed` entry and its server time
    const children: ChildHandle[] = [0, 1].map(() => spawnFixture('lane-child', [testUrl(), q, '4', '0']));
    await Promise.all(children.map((c) => c.waitForLine(/^READY$/)));
    await sleep(6200);
    for (const c of children) c.send('stop');
    await Promise.all(children.map((c) => c.waitForLine(/^STOPPED$/, 10_000)));
    // Each job's claim instant on the server clock: the `at` of the `claimed` event its claim
    // wrote (the same TIME the limiter read), once per job.
    const times = await claimTimes(q);
    const span = Math.max(...times) - Math.min(...times);
    if (process.env.DEBUG_SLIDE) process.stderr.write(JSON.stringify(times.sort((x, y) => x - y).map((t) => t - times[0])) + '\n');
    expect(span).toBeGreaterThanOrEqual(5000); // ≥ 5 s of saturation (120 jobs could not all start)
    expect(mostInWindow(times, 1000)).toBeLessThanOrEqual(10);
    // The limit is used, not undershot: 10 per second over the span (the first window's 10 at once).
    expect(times.length).toBeGreaterThanOrEqual(10 * Math.floor(span / 1000));
    for (const c of children) expect(c.lines.filter((l) => l.startsWith('JOB ')).length).toBeGreaterThan(0);
    expect(children.reduce((s, c) => s + c.lines.filter((l) => l.startsWith('JOB ')).length, 0)).toBe(times.length);
    expect(children.map((c) => c.stderr()).join('')).toBe('');
  }, 30_000);
});

describe('fixed and sliding at the wire', () => {
  /**
   * One job at the start of a 2 s window, nine 400 ms before its end, ten as soon as it ended: the
   * fixed window lets 19 start within about 400 ms (its documented burst, up to 2 × max around a
   * window's end); the sliding window lets one of the last ten start (the first job has left the
   * window) and holds the rest until the nine leave it. (The fixed window's end is read from the
   * server, `rate`'s PTTL, so the test does not depend on this process's timers.)
   */
  const WINDOW = 2000;
  async function burst(window: 'fixed' | 'sliding'): Promise<{ times: number[]; lastWait: number }> {
    const q = randomQueue(`burst${window}`);
    const k = queueKeys(q);
    await fill(q, 40);
    await writePolicy(f.conn.scriptClient, k, { rateLimit: { max: 10, intervalMs: WINDOW, window } });
    const times: number[] = [];
    const claim = async (n: number) => {
      const r = await wire.claim(f.conn.scriptClient, k, n, 60_000, 0);
      const now = await serverMs();
      for (let i = 0; i < r.jobs.length; i++) times.push(now);
      return r;
    };
    const t0 = await serverMs();
    expect((await claim(1)).jobs).toHaveLength(1);
    await sleep(t0 + WINDOW - 400 - (await serverMs()));
    expect((await claim(9)).jobs).toHaveLength(9);
    // Until the first window has ended (fixed: its key is gone; sliding: its first job left).
    while ((await serverMs()) < t0 + WINDOW + 5 || (await f.raw.exists(`emq:{${q}}:rate`)) === 1) await sleep(5);
    const last = await claim(10);
    return { times, lastWait: last.waitMs };
  }

  it('fixed: 19 claims within about 400 ms across the end of a window (the burst the sliding window prevents)', async () => {
    const { times } = await burst('fixed');
    expect(times).toHaveLength(20);
    expect(mostInWindow(times, WINDOW)).toBeGreaterThanOrEqual(19);
  });

  it('sliding: the same calls start 11 (the first job left the window before the last claim), never 11 in a window; the limited claim waits until the nine leave', async () => {
    const { times, lastWait } = await burst('sliding');
    expect(times).toHaveLength(11);
    expect(mostInWindow(times, WINDOW)).toBe(10);
    // The wait: until the nine (claimed ~400 ms before the first window's end) leave the window.
    const nine = times[1];
    const lastAt = times[times.length - 1];
    expect(Math.abs(lastWait - (nine + WINDOW - lastAt))).toBeLessThanOrEqual(50);
    expect(lastWait).toBeGreaterThan(WINDOW / 2);
  });

  it('a lane of a sliding window: at most its max in any window, other lanes unaffected', async () => {
    const q = randomQueue('lslide');
    const k = queueKeys(q);
    const items = [];
    for (let i = 0; i < 12; i++) for (const g of ['slow', 'fast']) items.push({ payload: { g, i }, opts: { lane: g } });
    await f.queues.enqueueMany(q, items);
    await f.queues.setPolicy(q, { lanes: { overrides: { slow: { rateLimit: { max: 3, intervalMs: 600, window: 'sliding' } } } } });
    const starts: { g: string; at: number }[] = [];
    const handler = async (job: { id: string; payload: unknown }) => {
      const deadline = await f.raw.zscore(k.active, job.id);
      starts.push({ g: (job.payload as { g: string }).g, at: Number(deadline) - 60_000 });
    };
    for (let i = 0; i < 2; i++) f.consumers.push((await startConsumer(f.conn, q, handler, { concurrency: 4, leaseMs: 60_000, maxIdleMs: 5000 })).consumer);
    const end = Date.now() + 8000;
    while (starts.filter((s) => s.g === 'slow').length < 12 && Date.now() < end) await sleep(20);
    const slow = starts.filter((s) => s.g === 'slow').map((s) => s.at);
    const fast = starts.filter((s) => s.g === 'fast').map((s) => s.at);
    expect(slow).toHaveLength(12);
    expect(fast).toHaveLength(12);
    expect(mostInWindow(slow, 600)).toBeLessThanOrEqual(3);
    expect(Math.max(...fast) - Math.min(...fast)).toBeLessThan(1200); // not held back (the slow lane's 12 take ≥ 1.8 s)
    expect(Math.max(...slow) - Math.min(...slow)).toBeGreaterThanOrEqual(3 * 600 - 50); // 12 at 3 per 600 ms: 4 windows
  });
});

describe('the option and its stored form', () => {
  it('setPolicy stores the window; policy() reads it back; a call in the old form (no window) stores a fixed window', async () => {
    const q = randomQueue('swin');
    const k = queueKeys(q);
    await f.queues.setPolicy(q, { rateLimit: { max: 10, intervalMs: 1000, window: 'sliding' } });
    expect(await f.raw.hget(k.meta, 'rate')).toBe('10 1000 sliding');
    expect(await f.queues.policy(q)).toEqual({ rateLimit: { max: 10, intervalMs: 1000, window: 'sliding' } });
    // A v2 peer that knows no window sends the five-argument form: a fixed window again.
    expect(await runScript(f.conn.scriptClient, 'policy', [k.meta, k.wake], [PROTOCOL_VERSION, 'set', 10, 1000, ''])).toEqual([1, '10 1000 sliding', '']);
    expect(await f.raw.hget(k.meta, 'rate')).toBe('10 1000');
    expect(await readPolicy(f.conn.client, k)).toEqual({ rateLimit: { max: 10, intervalMs: 1000 } });
    // `window: 'fixed'` is the same rule as no window: nothing written, the text unchanged.
    expect((await writePolicy(f.conn.scriptClient, k, { rateLimit: { max: 10, intervalMs: 1000, window: 'fixed' } })).changed).toBe(false);
    await f.queues.setPolicy(q, { lanes: { rateLimit: { max: 5, intervalMs: 100, window: 'sliding' }, overrides: { vip: { rateLimit: { max: 9, intervalMs: 100 } } } } });
    expect((await f.queues.policy(q)).lanePolicy).toBe('*=0,1,5,100,sliding g:vip=0,1,9,100');
  });

  it("a consumer declaring a sliding window stores it, and its upkeep finds the stored policy its own (no warning)", async () => {
    const q = randomQueue('sdecl');
    await fill(q, 3);
    const rateLimit: RateLimit = { max: 100, intervalMs: 1000, window: 'sliding' };
    const c = await startConsumer(f.conn, q, () => undefined, { rateLimit, leaseMs: 600 }); // upkeep every 200 ms
    f.consumers.push(c.consumer);
    await sleep(700);
    expect(await f.raw.hget(queueKeys(q).meta, 'rate')).toBe('100 1000 sliding');
    expect(c.log.warnings).toEqual([]);
  });

  it.each<[string, unknown]>([
    ['an unknown key (burst)', { max: 10, intervalMs: 1000, burst: 1 }],
    ['an unknown window', { max: 10, intervalMs: 1000, window: 'rolling' }],
    ['window without max', { intervalMs: 1000, window: 'sliding' }],
    ['not an object', 'sliding'],
  ])('queue rateLimit with %s is refused with EMQ_BAD_OPTION (module options, setPolicy)', async (_what, rateLimit) => {
    expect(await codeOf(() => resolveDefaults(BUILTIN_DEFAULTS, { rateLimit: rateLimit as RateLimit }))).toBe('EMQ_BAD_OPTION');
    expect(await codeOf(() => f.queues.setPolicy(randomQueue('sbad'), { rateLimit } as PolicyOptions))).toBe('EMQ_BAD_OPTION');
  });

  it('a lane rateLimit with an unknown key or window is refused with EMQ_BAD_OPTION', async () => {
    expect(await codeOf(() => lanePolicyWire({ rateLimit: { max: 1, intervalMs: 10, burst: 2 } as RateLimit }))).toBe('EMQ_BAD_OPTION');
    expect(await codeOf(() => lanePolicyWire({ overrides: { a: { rateLimit: { max: 1, intervalMs: 10, window: 'x' } as unknown as RateLimit } } }))).toBe('EMQ_BAD_OPTION');
  });
});
