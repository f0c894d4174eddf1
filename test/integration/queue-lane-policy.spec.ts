/**
 * Lane policy of fair lanes (`QueueDefaults.lanes`, docs/queue.md "Fair lanes"): per-lane
 * concurrency caps counted on the server across consumers, weights (a lane of weight w gets w
 * jobs per turn), per-lane rate limits honoured without polling, bad settings refused, the
 * renamed `groups` option refused with a hint.
 */
import 'reflect-metadata';
import { BUILTIN_DEFAULTS, resolveConsumerOptions, resolveDefaults } from '../../src/unstable.js';
import { EchoMqModule, Processor, type ProcessorOptions, type QueueDefaults } from '../../src/index.js';
import { queueKeys } from '../../src/core/keys.js';
import { wire } from '../../src/core/wire/queue.js';
import { writePolicy } from '../../src/core/wire/policy.js';
import { lanePolicyWire, type LaneOptions, type PolicyOptions } from '../../src/queue/lane-policy.js';
import type { Job } from '../../src/queue/job.js';
import { codeOf, refusedUnchanged } from '../helpers/refusals.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { scriptCalls } from '../helpers/script-calls.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

const f = queueFixture();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const laneOf = (job: Job<unknown>) => (job.payload as { g: string }).g;

/** Enqueues `per` jobs to each lane, interleaved, and returns their ids. */
async function fill(q: string, lanes: readonly string[], per: number): Promise<string[]> {
  const items = [];
  for (let i = 0; i < per; i++) for (const g of lanes) items.push({ payload: { g, i }, opts: { lane: g } });
  return f.queues.enqueueMany(q, items);
}

describe('per-lane concurrency caps', () => {
  it('a capped lane never has more than its cap active across two consumers, while lanes run side by side', async () => {
    const q = randomQueue('gcap');
    const lanes = ['g1', 'g2', 'g3'];
    await fill(q, lanes, 10);
    const lanePolicy = lanePolicyWire({ concurrency: 2, overrides: { g3: { concurrency: 1 } } });
    const now = new Map<string, number>();
    const peak = new Map<string, number>();
    let total = 0;
    let peakTotal = 0;
    let done = 0;
    const handler = async (job: Job<unknown>) => {
      const g = laneOf(job);
      now.set(g, (now.get(g) ?? 0) + 1);
      total++;
      peak.set(g, Math.max(peak.get(g) ?? 0, now.get(g)!));
      peakTotal = Math.max(peakTotal, total);
      await sleep(30);
      now.set(g, now.get(g)! - 1);
      total--;
      done++;
    };
    const k = queueKeys(q);
    let sampledMax = 0;
    const a = await startConsumer(f.conn, q, handler, { concurrency: 8, lanePolicy });
    const b = await startConsumer(f.conn, q, handler, { concurrency: 8, lanePolicy });
    f.consumers.push(a.consumer, b.consumer);
    // The server's own count: jobs in `active` (the anchor excluded) never exceed the caps' sum.
    const end = Date.now() + 10_000;
    while (done < 30 && Date.now() < end) {
      sampledMax = Math.max(sampledMax, await f.raw.zcount(k.active, '-inf', '(+inf'));
      await sleep(5);
    }
    expect(done).toBe(30);
    expect(peak.get('g1')).toBe(2);
    expect(peak.get('g2')).toBe(2);
    expect(peak.get('g3')).toBe(1);
    expect(peakTotal).toBeGreaterThanOrEqual(3); // lanes ran side by side
    expect(sampledMax).toBeLessThanOrEqual(5);
    expect([...a.log.errors, ...b.log.errors]).toEqual([]);
  });

  it('a lane at its cap becomes claimable when its job completes: an idle consumer is woken, not polling', async () => {
    const q = randomQueue('gcapwake');
    const k = queueKeys(q);
    const lanePolicy = lanePolicyWire({ concurrency: 1 });
    const [first, second] = await fill(q, ['t'], 2);
    await writePolicy(f.conn.scriptClient, k, { lanePolicy });
    const held = (await wire.claim(f.conn.scriptClient, k, 1, 30_000, 1000)).jobs;
    expect(held.map((j) => j.id)).toEqual([first]);
    const started: { id: string; at: number }[] = [];
    const c = await startConsumer(f.conn, q, (job) => void started.push({ id: job.id, at: Date.now() }), { concurrency: 4, lanePolicy, maxIdleMs: 5000 });
    f.consumers.push(c.consumer);
    await sleep(400);
    expect(started).toEqual([]); // the cap holds: the second job waits while the first is active
    const before = await scriptCalls(f.raw);
    const t0 = Date.now();
    expect(await wire.complete(f.conn.scriptClient, k, 100, [{ id: held[0].id, token: held[0].token, result: '' }])).toEqual([1]);
    await eventually(async () => started.length === 1, 4000, 'the second job');
    expect(started[0].id).toBe(second);
    expect(started[0].at - t0).toBeLessThan(2000); // woken by complete, well before the 5 s idle block ends
    expect((await scriptCalls(f.raw)) - before).toBeLessThan(20);
  });
});

describe('weights', () => {
  it('a lane of weight w gets w jobs per turn: shares over rotations, for claims of one and of five', async () => {
    const q = randomQueue('gweight');
    const k = queueKeys(q);
    await fill(q, ['vip', 'a', 'b'], 30);
    const lanePolicy = lanePolicyWire({ overrides: { vip: { weight: 3 } } });
    await writePolicy(f.conn.scriptClient, k, { lanePolicy });
    const claimed = async (n: number) => {
      const r = await wire.claim(f.conn.scriptClient, k, n, 30_000, 1000);
      return r.jobs.map((j) => (JSON.parse(j.payload) as { g: string }).g);
    };
    const ones: string[] = [];
    for (let i = 0; i < 25; i++) ones.push(...(await claimed(1)));
    for (let turn = 0; turn < 5; turn++) {
      const rotation = ones.slice(turn * 5, turn * 5 + 5);
      expect(rotation.filter((g) => g === 'vip')).toHaveLength(3);
      expect(rotation.filter((g) => g === 'a')).toHaveLength(1);
      expect(rotation.filter((g) => g === 'b')).toHaveLength(1);
    }
    for (let i = 0; i < 3; i++) {
      const five = await claimed(5);
      expect(five.sort()).toEqual(['a', 'b', 'vip', 'vip', 'vip']);
    }
  });
});

describe('per-lane rate limits', () => {
  it('two consumers together start at most max jobs of a lane per window, other lanes unaffected, without polling', async () => {
    const q = randomQueue('grate');
    const rate = { max: 3, intervalMs: 500 };
    await fill(q, ['slow', 'fast'], 9);
    const lanePolicy = lanePolicyWire({ overrides: { slow: { rateLimit: rate } } });
    const starts = new Map<string, number[]>([['slow', []], ['fast', []]]);
    const before = await scriptCalls(f.raw);
    const t0 = Date.now();
    const handler = (job: Job<unknown>) => void starts.get(laneOf(job))!.push(Date.now() - t0);
    const a = await startConsumer(f.conn, q, handler, { concurrency: 5, lanePolicy, maxIdleMs: 5000 });
    const b = await startConsumer(f.conn, q, handler, { concurrency: 5, lanePolicy, maxIdleMs: 5000 });
    f.consumers.push(a.consumer, b.consumer);
    await eventually(async () => starts.get('slow')!.length === 9, 8000, 'nine slow jobs');
    const slow = starts.get('slow')!.sort((x, y) => x - y);
    const fast = starts.get('fast')!.sort((x, y) => x - y);
    expect(fast).toHaveLength(9);
    expect(fast[8]).toBeLessThan(rate.intervalMs); // the unlimited lane is not held back
    // Three windows of three: the fourth job not before the first window ends, the seventh not
    // before the second does (the first claim opens the first window, after t0).
    expect(slow[3]).toBeGreaterThanOrEqual(rate.intervalMs - 50);
    expect(slow[6]).toBeGreaterThanOrEqual(2 * rate.intervalMs - 50);
    expect((await scriptCalls(f.raw)) - before).toBeLessThan(150); // waiting, not polling
  });
});

describe('the setting on a queue', () => {
  it("reaches every consumer of the queue as the claim's policy text: overrides merged over the shared settings", () => {
    const d = resolveDefaults(BUILTIN_DEFAULTS, { lanes: { concurrency: 2, rateLimit: { max: 10, intervalMs: 1000 }, overrides: { vip: { weight: 3 }, 'b.2': { concurrency: 5, rateLimit: { max: 1, intervalMs: 50 } } } } });
    expect(resolveConsumerOptions(d).lanePolicy).toBe('*=2,1,10,1000 g:vip=2,3,10,1000 g:b.2=5,1,1,50');
    expect(resolveConsumerOptions(BUILTIN_DEFAULTS).lanePolicy).toBeUndefined();
  });
});

describe('bad lane settings', () => {
  it.each<[string, LaneOptions]>([
    ['concurrency 0', { concurrency: 0 }],
    ['concurrency 100001', { concurrency: 100_001 }],
    ['weight 0', { weight: 0 }],
    ['weight 1.5', { weight: 1.5 }],
    ['weight 1001', { weight: 1001 }],
    ['rate max 0', { rateLimit: { max: 0, intervalMs: 100 } }],
    ['rate window 86400001', { rateLimit: { max: 1, intervalMs: 86_400_001 } }],
    ['an unknown key', { cap: 2 } as unknown as LaneOptions],
    ['a bad lane name', { overrides: { 'a b': { weight: 2 } } }],
    ['a bad override', { overrides: { vip: { weight: -1 } } }],
    ['overrides not an object', { overrides: [] as unknown as LaneOptions['overrides'] }],
  ])('%s is refused with EMQ_BAD_OPTION', async (_what, lanes) => {
    expect(await codeOf(() => resolveDefaults(BUILTIN_DEFAULTS, { lanes }))).toBe('EMQ_BAD_OPTION');
  });

  it('the renamed option `groups` is refused with a hint to `lanes`: queue options, module options, processor options, setPolicy', async () => {
    const q = randomQueue('gold');
    await fill(q, ['a'], 1);
    const old = { groups: { concurrency: 2 } };
    const refusals: [string, () => unknown][] = [
      ['queue options', () => resolveDefaults(BUILTIN_DEFAULTS, old as Partial<QueueDefaults>)],
      ['queue options', () => EchoMqModule.forRoot({ connection: { url: testUrl() }, defaults: old as Partial<QueueDefaults> })],
      ['queue options', () => EchoMqModule.forRoot({ connection: { url: testUrl() }, queues: { [q]: old as Partial<QueueDefaults> } })],
      ['queue options', () => EchoMqModule.forFeature([{ name: q, defaults: old as Partial<QueueDefaults> }])],
      [`@Processor("${q}") options`, () => Processor(q, old as ProcessorOptions)],
      ['setPolicy options', () => f.queues.setPolicy(q, old as PolicyOptions)],
    ];
    for (const [where, act] of refusals) {
      const err = await Promise.resolve().then(act).then(() => undefined, (e: unknown) => e);
      expect(err).toMatchObject({ code: 'EMQ_BAD_OPTION', message: `unknown option "groups" (renamed to "lanes") in ${where}` });
    }
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () => f.queues.setPolicy(q, old as PolicyOptions));
  });

  it('a bad policy on the wire is EMQ_BAD_ARG and writes nothing', async () => {
    const q = randomQueue('gbad');
    const k = queueKeys(q);
    await fill(q, ['a'], 2);
    const bad = [' ', 'g:a=1,1,0,0', '*=1,0,0,0', '*=1,1,5,0', '*=1,1,0,5', '*=-1,1,0,0', '*=1.5,1,0,0', '*=1,1,0,0 *=2,1,0,0', '*=1,1,0,0 g:a=1,1,0,0 g:a=2,1,0,0', '*=1,1,0,0 g:a{b}=1,1,0,0', '*=100001,1,0,0'];
    for (const lanePolicy of bad) {
      await refusedUnchanged(f.raw, q, 'EMQ_BAD_ARG', () => writePolicy(f.conn.scriptClient, k, { lanePolicy }));
    }
  });
});
