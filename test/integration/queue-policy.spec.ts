/**
 * The stored queue policy (policy.lua; docs/protocol.md §5 "Rate limits", "Group policy"): a
 * claim carries no limits, so every consumer of every runtime enforces the one stored rule. A
 * consumer that declares a policy writes it at start (warning when it replaced another) and its
 * upkeep warns when the stored one differs; a consumer that declares none is still bound.
 * Also claim's flow flags: a flow child is claimed as "c", a released parent as "p".
 */
import { queueKeys } from '../../src/core/keys.js';
import { wire } from '../../src/core/wire/queue.js';
import { lanePolicyWire } from '../../src/queue/lane-policy.js';
import type { Job } from '../../src/queue/job.js';
import { codeOf } from '../helpers/refusals.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const f = queueFixture();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the stored policy', () => {
  it('setPolicy stores and answers the previous policy; policy() reads it back; bad options are typed errors', async () => {
    const q = randomQueue('pset');
    expect(await f.queues.policy(q)).toEqual({});
    expect(await f.queues.setPolicy(q, { rateLimit: { max: 5, intervalMs: 1000 }, lanes: { concurrency: 2 } })).toEqual({});
    const stored = { rateLimit: { max: 5, intervalMs: 1000 }, lanePolicy: lanePolicyWire({ concurrency: 2 }) };
    expect(await f.queues.policy(q)).toEqual(stored);
    expect(await f.queues.setPolicy(q, {})).toEqual(stored);
    expect(await f.queues.policy(q)).toEqual({});
    expect(await codeOf(() => f.queues.setPolicy(q, { rateLimit: { max: 0, intervalMs: 1000 } }))).toBe('EMQ_BAD_OPTION');
    expect(await codeOf(() => f.queues.setPolicy(q, { lanes: { concurrency: -1 } }))).toBe('EMQ_BAD_OPTION');
  });

  it('a consumer that passes no policy on a queue with a stored cap is still capped', async () => {
    const q = randomQueue('pbypass');
    await f.queues.setPolicy(q, { lanes: { concurrency: 1 } });
    await f.queues.enqueueMany(q, Array.from({ length: 6 }, (_, i) => ({ payload: { i }, opts: { lane: 'g' } })));
    let now = 0;
    let peak = 0;
    let done = 0;
    const c = await startConsumer(f.conn, q, async () => {
      peak = Math.max(peak, ++now);
      await sleep(30);
      now--;
      done++;
    }, { concurrency: 4 });
    f.consumers.push(c.consumer);
    await eventually(async () => done === 6, 10_000, 'all jobs');
    expect(peak).toBe(1);
    expect(c.log.warnings).toEqual([]);
  });

  it('two consumers declaring different policies: the later wins and warns, the cap holds across both, the earlier warns from its upkeep', async () => {
    const q = randomQueue('ptwo');
    const a = await startConsumer(f.conn, q, () => sleep(40), { concurrency: 4, lanePolicy: lanePolicyWire({ concurrency: 3 }), leaseMs: 600 });
    f.consumers.push(a.consumer);
    expect(a.log.warnings).toEqual([]);
    let now = 0;
    let peak = 0;
    let done = 0;
    const handler = async (_job: Job<unknown>) => {
      peak = Math.max(peak, ++now);
      await sleep(40);
      now--;
      done++;
    };
    await a.consumer.stop(2000);
    const a2 = await startConsumer(f.conn, q, handler, { concurrency: 4, lanePolicy: lanePolicyWire({ concurrency: 3 }), leaseMs: 600 });
    f.consumers.push(a2.consumer);
    const b = await startConsumer(f.conn, q, handler, { concurrency: 4, lanePolicy: lanePolicyWire({ concurrency: 1 }), leaseMs: 600 });
    f.consumers.push(b.consumer);
    expect(b.log.warnings.join('\n')).toMatch(/replaced the queue's stored policy \(lanes "\*=3,1,0,0"\)/);
    await f.queues.enqueueMany(q, Array.from({ length: 8 }, (_, i) => ({ payload: { i }, opts: { lane: 'g' } })));
    await eventually(async () => done === 8, 15_000, 'all jobs');
    expect(peak).toBe(1);
    await eventually(async () => a2.log.warnings.some((w) => w.includes('differs from the one this process declared')), 5000, 'the upkeep warning');
    await sleep(700);
    expect(a2.log.warnings.filter((w) => w.includes('differs from')).length).toBe(1); // once per change
  });
});

describe('flow flags', () => {
  it('a flow child is claimed as "c", its released parent as "p"', async () => {
    const q = randomQueue('pflow');
    const k = queueKeys(q);
    await f.queues.flow({ queue: q, payload: { parent: true }, children: [{ queue: q, payload: { child: true } }] });
    const c = await wire.claim(f.conn.scriptClient, k, 5, 30_000, 1000);
    expect(c.jobs.map((j) => j.flow)).toEqual(['c']);
    expect(await wire.complete(f.conn.scriptClient, k, 100, [{ id: c.jobs[0].id, token: c.jobs[0].token, result: '' }])).toEqual([1]);
    let parent = { jobs: [] as { flow: string }[] };
    await eventually(async () => {
      parent = await wire.claim(f.conn.scriptClient, k, 5, 30_000, 1000);
      return parent.jobs.length === 1;
    }, 5000, 'the released parent');
    expect(parent.jobs.map((j) => j.flow)).toEqual(['p']);
  });
});
