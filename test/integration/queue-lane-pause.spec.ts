/**
 * Pausing one lane (issue 37, item 3; docs/queue.md "Pausing a lane"): `QueueService.pauseLane`
 * stores the pause in the queue's meta, so every claim of every consumer (here two, on two
 * connections, and a bare wire claim) passes the lane over: its jobs stay pending, jobs already
 * running finish, the other lanes go on at their weights; `resumeLane` wakes an idle consumer and
 * the lane is claimed again. `policy()` shows the paused lanes.
 */
import { queueKeys } from '../../src/core/keys.js';
import { wire } from '../../src/core/wire/queue.js';
import type { Job } from '../../src/queue/job.js';
import { startConsumer } from '../helpers/consumers.js';
import { codeOf } from '../helpers/refusals.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, openConnection, randomQueue } from '../helpers/valkey.js';

const f = queueFixture();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const laneOf = (job: Job<unknown>) => (job.payload as { g: string }).g;

async function fill(q: string, lanes: readonly string[], per: number): Promise<void> {
  const items = [];
  for (let i = 0; i < per; i++) for (const g of lanes) items.push({ payload: { g, i }, opts: { lane: g } });
  await f.queues.enqueueMany(q, items);
}

describe('pausing one lane', () => {
  it('new claims skip the paused lane fleet-wide, its running jobs finish, the others go on at their weights; resume brings it back at once', async () => {
    const q = randomQueue('lpause');
    const k = queueKeys(q);
    await fill(q, ['a', 'b', 'c'], 150);
    await f.queues.setPolicy(q, { lanes: { overrides: { c: { weight: 3 } } } });
    const started: { g: string; token: number; at: number }[] = [];
    let bRunning = 0;
    let bFinished = 0;
    let bRunningAtPause = -1;
    const handler = async (job: Job<unknown>) => {
      const b = laneOf(job) === 'b';
      if (b) bRunning++;
      started.push({ g: laneOf(job), token: Number(job.token), at: Date.now() });
      await sleep(b ? 60 : 5);
      if (b) (bRunning--, bFinished++);
    };
    const other = await openConnection(); // a second process's connection: the pause is in Valkey, not in a client
    try {
      const x = await startConsumer(f.conn, q, handler, { concurrency: 3, maxIdleMs: 5000 });
      const y = await startConsumer(other, q, handler, { concurrency: 3, maxIdleMs: 5000 });
      f.consumers.push(x.consumer, y.consumer);
      await eventually(async () => started.filter((s) => s.g === 'b').length >= 5, 5000, 'b running');
      expect(await f.queues.pauseLane(q, 'b')).toBe(true);
      expect(await f.queues.pauseLane(q, 'b')).toBe(false); // already paused
      const tokenAtPause = Number(await f.raw.hget(k.meta, 'token'));
      bRunningAtPause = bRunning;
      expect(await f.queues.policy(q)).toEqual({ lanePolicy: '*=0,1,0,0 g:c=0,3,0,0', pausedLanes: ['b'] });
      const before = started.length;
      await eventually(async () => started.length >= before + 120, 10_000, '120 more jobs of a and c');
      // The jobs of b running at the pause finished; no job of b was claimed after it (by the
      // server's claim order: the fencing token).
      expect(bFinished).toBe(started.filter((s) => s.g === 'b').length);
      expect(started.filter((s) => s.g === 'b' && s.token > tokenAtPause)).toEqual([]);
      // The others kept their weights: c 3 of every 4 claimed after the pause.
      const after = started.filter((s) => s.token > tokenAtPause).sort((p, r) => p.token - r.token).slice(0, 120);
      const c = after.filter((s) => s.g === 'c').length / after.length;
      expect(Math.abs(c - 0.75)).toBeLessThanOrEqual(0.05);
      expect(after.filter((s) => s.g === 'a').length).toBeGreaterThan(0);
      // A bare wire claim (any runtime's claim) passes b over too.
      const raw = await wire.claim(f.conn.scriptClient, k, 20, 30_000, 0);
      expect(raw.jobs.map((j) => (JSON.parse(j.payload) as { g: string }).g).filter((g) => g === 'b')).toEqual([]);
      for (const j of raw.jobs) await wire.complete(f.conn.scriptClient, k, 100, [{ id: j.id, token: j.token, result: '' }]);
      // Resume: the lane is claimed again, well before the idle block (5 s) would end.
      const t0 = Date.now();
      expect(await f.queues.resumeLane(q, 'b')).toBe(true);
      expect(await f.queues.resumeLane(q, 'b')).toBe(false);
      expect(await f.queues.policy(q)).toEqual({ lanePolicy: '*=0,1,0,0 g:c=0,3,0,0' });
      await eventually(async () => started.some((s) => s.g === 'b' && s.at >= t0), 3000, 'b claimed after resume');
      expect(started.find((s) => s.g === 'b' && s.at >= t0)!.at - t0).toBeLessThan(1000);
      expect([...x.log.errors, ...y.log.errors]).toEqual([]);
    } finally {
      await Promise.all(f.consumers.splice(0).map((c) => c.stop(2000)));
      await other.close();
    }
    expect(bRunningAtPause).toBeGreaterThanOrEqual(0); // (b jobs take 60 ms: usually some were running at the pause)
  }, 30_000);

  it('a paused lane whose other lanes are empty leaves idle consumers blocked, not polling; its jobs stay pending', async () => {
    const q = randomQueue('lpidle');
    const k = queueKeys(q);
    await fill(q, ['only'], 5);
    expect(await f.queues.pauseLane(q, 'only')).toBe(true);
    const started: string[] = [];
    const before = Number((await f.raw.info('stats')).match(/total_commands_processed:(\d+)/)![1]);
    const c = await startConsumer(f.conn, q, (job) => void started.push(job.id), { concurrency: 2, maxIdleMs: 5000 });
    f.consumers.push(c.consumer);
    await sleep(800);
    expect(started).toEqual([]);
    expect((await f.queues.counts(q)).pending).toBe(5);
    const cmds = Number((await f.raw.info('stats')).match(/total_commands_processed:(\d+)/)![1]) - before;
    expect(cmds).toBeLessThan(100); // blocked on wake, not claiming in a loop
    expect(await f.queues.resumeLane(q, 'only')).toBe(true);
    await eventually(async () => started.length === 5, 3000, 'all five after resume');
    expect(await f.raw.hget(k.meta, 'gpaused')).toBeNull();
  });

  it('bad lane names are refused with EMQ_BAD_OPTION before any I/O', async () => {
    for (const lane of ['', 'a b', 'x'.repeat(101), 'a{b}', 3 as unknown as string]) {
      expect(await codeOf(() => f.queues.pauseLane('q1', lane))).toBe('EMQ_BAD_OPTION');
      expect(await codeOf(() => f.queues.resumeLane('q1', lane))).toBe('EMQ_BAD_OPTION');
    }
    expect(await codeOf(() => f.queues.pauseLane('bad name', 'a'))).toBe('EMQ_BAD_NAME');
  });
});
