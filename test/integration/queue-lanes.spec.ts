/**
 * Fair lanes (`EnqueueOptions.lane`, docs/queue.md "Fair lanes") through QueueService, the claim
 * script and a real Consumer: the starvation bound, retries back to their lane, bad lanes, the
 * renamed `group` option refused with a hint.
 */
import { queueKeys, wire } from '../../src/protocol.js';
import { refusedUnchanged } from '../helpers/refusals.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue } from '../helpers/valkey.js';
import type { EnqueueOptions } from '../../src/index.js';

const f = queueFixture();

/** Enqueues `n` jobs of `lane` (payload `{ g, i }`) in batches of 1000. */
async function fill(q: string, lane: string, n: number): Promise<void> {
  for (let at = 0; at < n; at += 1000) {
    const items = Array.from({ length: Math.min(1000, n - at) }, (_, i) => ({ payload: { g: lane, i: at + i }, opts: { lane } }));
    await f.queues.enqueueMany(q, items);
  }
}

describe('fair lanes', () => {
  it('starvation bound: behind 100,000 pending of one lane, the 10 jobs of another are all claimed within the next 20 claimed jobs', async () => {
    const q = randomQueue('lanes');
    const k = queueKeys(q);
    await fill(q, 'big', 100_000);
    await fill(q, 'small', 10);
    // G = 2 lanes with work: one claim at a time, the lanes alternate.
    const claimed: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await wire.claim(f.conn.scriptClient, k, 1, 30_000);
      for (const j of r.jobs) claimed.push((JSON.parse(j.payload) as { g: string }).g);
    }
    expect(claimed.filter((g) => g === 'small')).toHaveLength(10);
    expect(claimed).toHaveLength(20);
    // The big lane's order is FIFO: its next job is number 10.
    const next = await wire.claim(f.conn.scriptClient, k, 1, 30_000);
    expect(JSON.parse(next.jobs[0].payload)).toEqual({ g: 'big', i: 10 });
    expect((await f.queues.counts(q)).pending).toBe(100_000 - 11);
  }, 60_000);

  it('batched claims: each claim of n shares n over the G lanes, at least floor(n / G) each', async () => {
    const q = randomQueue('lanes');
    const k = queueKeys(q);
    await fill(q, 'big', 10_000);
    await fill(q, 'small', 10);
    let small = 0;
    for (let i = 0; i < 5; i++) {
      const r = await wire.claim(f.conn.scriptClient, k, 5, 30_000);
      small += r.jobs.filter((j) => (JSON.parse(j.payload) as { g: string }).g === 'small').length;
    }
    expect(small).toBe(10); // at least 2 per claim of 5 over 2 lanes
  });

  it('with 100 lanes of uneven backlogs, every lane gets a job within the first 100 claimed', async () => {
    const q = randomQueue('lanes');
    const k = queueKeys(q);
    await fill(q, 'g0', 5000);
    for (let g = 1; g < 100; g++) await f.queues.enqueueMany(q, [{ payload: { g: `g${g}`, i: 0 }, opts: { lane: `g${g}` } }]);
    const seen = new Set<string>();
    for (let i = 0; i < 2; i++) {
      const r = await wire.claim(f.conn.scriptClient, k, 50, 30_000);
      for (const j of r.jobs) seen.add((JSON.parse(j.payload) as { g: string }).g);
    }
    expect(seen.size).toBe(100);
  });

  it('steady state (a ring longer than n): over 100 lanes of uneven backlogs, claims of 50 serve each lane with work once per ceil(G / 50) claims, FIFO within each', async () => {
    const q = randomQueue('lanes');
    const k = queueKeys(q);
    const sizes = Array.from({ length: 100 }, (_, g) => 5 + (g % 7)); // 5..11 jobs: lanes empty at different turns
    for (let i = 0; i < 11; i++) {
      const items = sizes.flatMap((n, g) => (i < n ? [{ payload: { g: `g${g}`, i }, opts: { lane: `g${g}` } }] : []));
      await f.queues.enqueueMany(q, items);
    }
    // The bound (docs/protocol.md §5): with G lanes with work at a claim that served a lane, its
    // next job comes at most ceil(G / n) claims later; FIFO within each lane.
    const left = new Map(sizes.map((n, g) => [`g${g}`, n]));
    // (Each lane's first job counts as one after a job at claim -1, with 100 lanes with work.)
    const last = new Map(sizes.map((_, g) => [`g${g}`, { i: -1, claim: -1, bound: 2 }]));
    let withWork = 100;
    let claims = 0;
    let waitMs = -1;
    while (waitMs === -1) {
      const r = await wire.claim(f.conn.scriptClient, k, 50, 30_000);
      const bound = Math.ceil(withWork / 50);
      for (const j of r.jobs) {
        const job = JSON.parse(j.payload) as { g: string; i: number };
        const prev = last.get(job.g);
        expect(job.i).toBe((prev?.i ?? -2) + 1);
        expect(claims - (prev?.claim ?? 0)).toBeLessThanOrEqual(prev?.bound ?? 0);
        last.set(job.g, { i: job.i, claim: claims, bound });
        const n = (left.get(job.g) ?? 0) - 1;
        left.set(job.g, n);
        if (n === 0) withWork--;
      }
      waitMs = r.waitMs;
      claims++;
    }
    expect(waitMs).toBe(-2);
    expect(withWork).toBe(0);
    expect(claims).toBeLessThanOrEqual(Math.ceil(sizes.reduce((a, n) => a + n, 0) / 50) + 2);
    expect(await f.raw.exists(k.laneRing)).toBe(0);
  });

  it('a consumer interleaves lanes, and a failed job is retried in its own lane', async () => {
    const q = randomQueue('lanes');
    await fill(q, 'a', 6);
    await fill(q, 'b', 2);
    const seen: string[] = [];
    let failed = false;
    const { consumer } = await startConsumer(
      f.conn,
      q,
      (job) => {
        const p = job.payload as { g: string; i: number };
        seen.push(`${p.g}${p.i}`);
        if (p.g === 'b' && !failed) {
          failed = true;
          throw new Error('once');
        }
      },
      { prefetch: 0 },
    );
    try {
      const end = Date.now() + 10_000;
      while (seen.length < 9 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    } finally {
      await consumer.stop(2000);
    }
    expect(seen.slice(0, 4)).toEqual(['a0', 'b0', 'a1', 'b1']);
    expect(seen.filter((s) => s === 'b0')).toHaveLength(2);
    const row = await f.raw.hgetall(queueKeys(q).jobPrefix + (await f.raw.zrange(queueKeys(q).done, 0, -1))[0]);
    expect(row.group).toMatch(/^[ab]$/); // the row's field keeps the wire's name
  });

  it.each([[''], ['a b'], ['x'.repeat(101)], ['{t}'], [7]])('lane %p is refused with EMQ_BAD_OPTION, nothing written', async (lane) => {
    const q = randomQueue('lanes');
    await f.queues.enqueue(q, 'seed', { lane: 'ok' });
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () => f.queues.enqueue(q, 'x', { lane: lane as string }));
  });

  it('priority and lane together are refused, nothing written', async () => {
    const q = randomQueue('lanes');
    await f.queues.enqueue(q, 'seed');
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () => f.queues.enqueue(q, 'x', { lane: 'a', priority: 3 }));
  });

  it('the renamed option `group` is refused with a hint to `lane` (enqueue and enqueueMany), nothing written', async () => {
    const q = randomQueue('lanes');
    await f.queues.enqueue(q, 'seed', { lane: 'ok' });
    const old = { group: 'a' } as unknown as EnqueueOptions;
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () => f.queues.enqueue(q, 'x', old));
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () => f.queues.enqueueMany(q, [{ payload: 'y', opts: { lane: 'b' } }, { payload: 'x', opts: old }]));
    await expect(f.queues.enqueue(q, 'x', old)).rejects.toThrow('unknown option "group" (renamed to "lane") in enqueue options');
  });
});
