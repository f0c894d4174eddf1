/**
 * Weighted fair lanes at any claim size (issue 37, item 1; docs/queue.md "Fair lanes"): a lane of
 * weight w gets w/W of a saturated queue whatever the claims' sizes, because a claim goes on where
 * the last one stopped (a turn cut short in any round continues in the next claim: `gturn`).
 * Checked at the wire (claims of mixed sizes deal exactly the sequence claims of one deal) and
 * with consumers in two processes at concurrency 1, 4 and 8, measured by the server's claim order
 * (the fencing token every claim mints from the queue's counter).
 */
import { queueKeys } from '../../src/core/keys.js';
import { wire } from '../../src/core/wire/queue.js';
import { spawnFixture, type ChildHandle } from '../helpers/child.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue, testUrl } from '../helpers/valkey.js';

const f = queueFixture();
const WEIGHTS = { a: 1, b: 1, w: 3 } as const;
const LANES = Object.keys(WEIGHTS) as (keyof typeof WEIGHTS)[];
const W = LANES.reduce((s, g) => s + WEIGHTS[g], 0);

/** A queue with `per` jobs in each lane (interleaved) and the weights 1/1/3 stored as its policy. */
async function weightedQueue(prefix: string, per: number): Promise<string> {
  const q = randomQueue(prefix);
  const items = [];
  for (let i = 0; i < per; i++) for (const g of LANES) items.push({ payload: { g, i }, opts: { lane: g } });
  await f.queues.enqueueMany(q, items);
  await f.queues.setPolicy(q, { lanes: { overrides: { w: { weight: 3 } } } });
  return q;
}

/** Claims `n` jobs at the wire; answers their lanes in claim (token) order. */
async function claimLanes(q: string, n: number): Promise<string[]> {
  const r = await wire.claim(f.conn.scriptClient, queueKeys(q), n, 60_000, 1000);
  return r.jobs.sort((x, y) => Number(x.token) - Number(y.token)).map((j) => (JSON.parse(j.payload) as { g: string }).g);
}

const countOf = (lanes: readonly string[]): Record<string, number> => {
  const c: Record<string, number> = { a: 0, b: 0, w: 0 };
  for (const g of lanes) c[g]++;
  return c;
};

describe('weights at any claim size (the wire)', () => {
  it('one claim of 8 over weights 1/1/3, then the next ones: W gets 3 of every 5 jobs, not 4 of every 8', async () => {
    const q = await weightedQueue('wt8', 80);
    const got: string[] = [];
    for (let i = 0; i < 15; i++) got.push(...(await claimLanes(q, 8)));
    expect(got).toHaveLength(120);
    // Before the fix every claim of 8 was a2 + b2 + w4 (W's share .5, .25 each for a and b).
    expect(countOf(got.slice(0, 8))).toEqual({ a: 2, b: 2, w: 4 });
    expect(countOf(got.slice(0, 24))).toEqual({ a: 5, b: 5, w: 14 });
    expect(countOf(got)).toEqual({ a: 24, b: 24, w: 72 });
  });

  it('claims of mixed sizes deal exactly the sequence of turns that claims of one deal', async () => {
    const ones = await weightedQueue('wt1', 120);
    const mixed = await weightedQueue('wtm', 120);
    const seq: string[] = [];
    for (let i = 0; i < 160; i++) seq.push(...(await claimLanes(ones, 1)));
    // Turns of w jobs in ring order: a, b, w w w, a, b, w w w, …
    expect(seq.slice(0, 10)).toEqual(['a', 'b', 'w', 'w', 'w', 'a', 'b', 'w', 'w', 'w']);
    const sizes = [8, 8, 3, 16, 1, 5, 13, 2, 30, 7, 4, 9, 11, 6, 20, 17];
    const all: string[] = [];
    for (const n of sizes) {
      const got = await claimLanes(mixed, n);
      expect(got).toHaveLength(n);
      all.push(...got);
      // After every claim, each lane has had exactly what the first claims of one gave it.
      expect(countOf(all)).toEqual(countOf(seq.slice(0, all.length)));
    }
    expect(all).toHaveLength(160);
  });
});

describe('weights across two processes', () => {
  const N = 600;
  it.each([1, 4, 8])(
    'consumers in 2 processes at concurrency %i: the first 600 jobs claimed (by token) are shared .2/.2/.6 within ±0.05',
    async (concurrency) => {
      const q = await weightedQueue(`wtp${concurrency}`, 400); // 1200 jobs: every lane stays saturated past the 600th claim
      const children: ChildHandle[] = [0, 1].map(() => spawnFixture('lane-child', [testUrl(), q, String(concurrency), '2']));
      await Promise.all(children.map((c) => c.waitForLine(/^READY$/)));
      const lanes = new Map<number, string>();
      const read = (): void => {
        for (const c of children) {
          for (const l of c.lines) {
            const m = /^JOB (\d+) (\w+)/.exec(l);
            if (m) lanes.set(Number(m[1]), m[2]);
          }
        }
      };
      const end = Date.now() + 25_000;
      for (;;) {
        read();
        let have = 0;
        for (let t = 1; t <= N; t++) if (lanes.has(t)) have++;
        if (have === N || Date.now() > end) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      for (const c of children) c.send('stop');
      await Promise.all(children.map((c) => c.waitForLine(/^STOPPED$/, 10_000)));
      const first = Array.from({ length: N }, (_, i) => lanes.get(i + 1));
      expect(first.filter((g) => g === undefined)).toHaveLength(0);
      const c = countOf(first as string[]);
      // The bound is ±0.05; claims continuing each other's turns give the exact sequence
      // (measured 120/120/360 at concurrency 1 and 4, 121/120/359 at 8), so hold it to ±0.02:
      // without the fix concurrency 8 measured 132/131/337 here (.56 for w).
      for (const g of LANES) expect(Math.abs(c[g] / N - WEIGHTS[g] / W)).toBeLessThanOrEqual(0.02);
      // Both processes took part (the shares are the fleet's, not one consumer's).
      for (const ch of children) expect(ch.lines.filter((l) => l.startsWith('JOB ')).length).toBeGreaterThan(50);
      expect(children.map((ch) => ch.stderr()).join('')).toBe('');
    },
    60_000,
  );
});
