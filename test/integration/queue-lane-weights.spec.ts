/**
 * Weighted fair lanes at any claim size (issue 37, item 1; docs/queue.md "Fair lanes"): a lane of
 * weight w gets w/W of a saturated queue whatever the claims' sizes, because a claim goes on where
 * the last one stopped (a turn cut short in any round continues in the next claim: `gturn`).
 * Checked at the wire (claims of mixed sizes deal exactly the sequence claims of one deal) and
 * with consumers in two processes at concurrency 1, 4 and 8, measured by the server's claim order
 * (the fencing token every claim mints from the queue's counter). Lanes without a stored policy:
 * this runtime's claims send `default-fair` (`fair`) and get the same exact rotation, weights 1;
 * a claim without it keeps the old rotation (every claim larger than the ring starting at the
 * same lane).
 */
import { queueKeys } from '../../src/core/keys.js';
import { PROTOCOL_VERSION, scripts } from '../../src/core/scripts.js';
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

const PLAIN = ['a', 'b', 'c'] as const;

/** A queue with `per` jobs in each of the lanes a, b, c (interleaved) and no stored policy. */
async function plainLaneQueue(prefix: string, per: number): Promise<string> {
  const q = randomQueue(prefix);
  const items = [];
  for (let i = 0; i < per; i++) for (const g of PLAIN) items.push({ payload: { g, i }, opts: { lane: g } });
  await f.queues.enqueueMany(q, items);
  return q;
}

/** Claims `n` jobs at the wire, with or without the `default-fair` argument; answers their lanes. */
async function claimPlain(q: string, n: number, defaultFair: boolean): Promise<string[]> {
  const r = await wire.claim(f.conn.scriptClient, queueKeys(q), n, 60_000, 1000, defaultFair);
  return r.jobs.sort((x, y) => Number(x.token) - Number(y.token)).map((j) => (JSON.parse(j.payload) as { g: string }).g);
}

const countPlain = (lanes: readonly (string | undefined)[]): Record<string, number> => {
  const c: Record<string, number> = { a: 0, b: 0, c: 0 };
  for (const g of lanes) if (g !== undefined) c[g]++;
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

describe('lanes without a stored policy (the claim argument default-fair)', () => {
  it('the flag: one claim of 8 over 3 lanes, then the next ones, deal 1/3 each (8/8/8 of 24)', async () => {
    const q = await plainLaneQueue('df8', 40);
    const first = await claimPlain(q, 8, true);
    expect(first).toHaveLength(8);
    expect(countPlain(first)).toEqual({ a: 3, b: 3, c: 2 });
    const got = [...first];
    got.push(...(await claimPlain(q, 8, true)), ...(await claimPlain(q, 8, true)));
    expect(got).toHaveLength(24);
    // The second claim starts at the lane whose turn came next (c), not at a again: c a b c a b c a.
    expect(countPlain(got.slice(0, 16))).toEqual({ a: 6, b: 5, c: 5 });
    expect(countPlain(got)).toEqual({ a: 8, b: 8, c: 8 });
    // Claims of mixed sizes with the flag deal the sequence claims of one deal.
    const ones = await plainLaneQueue('df1', 40);
    const mixed = await plainLaneQueue('dfm', 40);
    const seq: string[] = [];
    for (let i = 0; i < 60; i++) seq.push(...(await claimPlain(ones, 1, true)));
    const all: string[] = [];
    for (const n of [8, 3, 16, 1, 5, 13, 2, 7, 5]) {
      const part = await claimPlain(mixed, n, true);
      expect(part).toHaveLength(n);
      all.push(...part);
      expect(countPlain(all)).toEqual(countPlain(seq.slice(0, all.length)));
    }
  });

  it('claims of 5 over 3 lanes: 2/2/1 from the same lane every claim without the flag, 1/3 each with it', async () => {
    const old = await plainLaneQueue('df5o', 40);
    const fair = await plainLaneQueue('df5f', 40);
    const gotOld: string[] = [];
    const gotFair: string[] = [];
    for (let i = 0; i < 6; i++) {
      gotOld.push(...(await claimPlain(old, 5, false)));
      gotFair.push(...(await claimPlain(fair, 5, true)));
    }
    expect(countPlain(gotOld)).toEqual({ a: 12, b: 12, c: 6 });
    expect(countPlain(gotFair)).toEqual({ a: 10, b: 10, c: 10 });
  });

  it('without the flag (older callers, the Go peer): claims of 8 rotate as before, every claim starting at the same lane', async () => {
    const q = await plainLaneQueue('dfo', 40);
    const got: string[] = [];
    for (let i = 0; i < 3; i++) {
      const part = await claimPlain(q, 8, false);
      // The old rotation: the lane "" outside the ring takes a share of the window, so a claim of
      // 8 over 3 lanes takes 6, two from each lane, from the same place of the ring every time.
      expect(countPlain(part)).toEqual({ a: 2, b: 2, c: 2 });
      expect(part[0]).toBe('a');
      got.push(...part);
    }
    expect(got).toHaveLength(18);
    expect(await f.conn.client.exists(queueKeys(q).meta.replace(/meta$/, 'gturn'))).toBe(0);
  });

  it('an argument other than "", "0" or "fair" is refused and writes nothing', async () => {
    const q = await plainLaneQueue('dfb', 2);
    const k = queueKeys(q);
    const keys = [k.meta, k.pending, k.scheduled, k.active, k.wake, k.data, k.opts, k.jobPrefix, k.events];
    const ring = await f.conn.client.lrange(queueKeys(q).meta.replace(/meta$/, 'groups'), 0, -1);
    // 1 too: the value is a word, so that a claim passing a limit stays refused (rate.json).
    for (const bad of ['1', '2', 'yes', 'Fair', ' fair', 'fair ']) {
      await expect(f.conn.client.eval(scripts().get('claim')!.source, keys.length, ...keys, PROTOCOL_VERSION, 4, 60_000, 1000, bad)).rejects.toMatchObject({ code: 'EMQ_BAD_ARG' });
    }
    expect(await f.conn.client.lrange(queueKeys(q).meta.replace(/meta$/, 'groups'), 0, -1)).toEqual(ring);
    expect(await f.conn.client.zcard(k.active)).toBe(0);
    expect(await f.conn.client.hget(k.meta, 'token')).toBeNull();
  });

  it.each([
    [8, 2],
    [5, 20],
  ])('consumers in 2 processes at concurrency %i (handler %i ms), no `lanes` option anywhere: the first 600 jobs (by token) are 1/3 each within ±0.02', async (concurrency, handlerMs) => {
    const N = 600;
    const q = await plainLaneQueue(`dfp${concurrency}`, 400); // 1200 jobs: every lane stays saturated past the 600th claim
    const children: ChildHandle[] = [0, 1].map(() => spawnFixture('lane-child', [testUrl(), q, String(concurrency), String(handlerMs)]));
    await Promise.all(children.map((c) => c.waitForLine(/^READY$/)));
    const lanes = new Map<number, string>();
    const end = Date.now() + 25_000;
    for (;;) {
      for (const c of children) {
        for (const l of c.lines) {
          const m = /^JOB (\d+) (\w+)/.exec(l);
          if (m) lanes.set(Number(m[1]), m[2]);
        }
      }
      let have = 0;
      for (let t = 1; t <= N; t++) if (lanes.has(t)) have++;
      if (have === N || Date.now() > end) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const c of children) c.send('stop');
    await Promise.all(children.map((c) => c.waitForLine(/^STOPPED$/, 10_000)));
    const first = Array.from({ length: N }, (_, i) => lanes.get(i + 1));
    expect(first.filter((g) => g === undefined)).toHaveLength(0);
    const c = countPlain(first);
    process.stdout.write(`no-policy shares, 2 processes at concurrency ${concurrency}, ${handlerMs} ms: ${JSON.stringify(c)}\n`);
    // With the flag: 200/200/200 at both. Without it (the old rotation, every claim larger than
    // the ring starting at the same place) concurrency 5 / 20 ms measured 206/205/189 and
    // 178/214/208; concurrency 8 / 2 ms, mostly small claims, measured 200/200/200 and 203/199/198.
    for (const g of PLAIN) expect(Math.abs(c[g] / N - 1 / 3)).toBeLessThanOrEqual(0.02);
    for (const ch of children) expect(ch.lines.filter((l) => l.startsWith('JOB ')).length).toBeGreaterThan(50);
    expect(children.map((ch) => ch.stderr()).join('')).toBe('');
    expect(await f.conn.client.hget(queueKeys(q).meta, 'gpol')).toBeNull();
  }, 60_000);
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
