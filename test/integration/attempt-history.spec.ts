/**
 * Issue 38, per-attempt history: each attempt of a job is recorded (number, start and end on the
 * server clock, duration, worker, outcome, error and stack), the newest 10 that did not complete
 * in the row's `hist`, the running or completed one derived from the row. A history planted by
 * hand never fails a read (API, CLI, dashboard); retry's worker and stack arguments are checked.
 */
import { hostname } from 'node:os';
import { QueueAdmin, type JobView } from '../../src/index.js';
import { queueKeys } from '../../src/protocol.js';
import { PROTOCOL_VERSION, runScript } from '../../src/protocol.js';
import { wire } from '../../src/core/wire/index.js';
import { MAIN, runCli } from '../helpers/cli.js';
import { startConsumer } from '../helpers/consumers.js';
import { startDashboardApp, type DashboardTestApp } from '../helpers/dashboard.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

const f = queueFixture();
const defaults = { maxAttempts: 100, backoff: 'f:0', deadCap: 1000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A handler that throws on its first two attempts (its name is in the stack), then returns. */
function chargeTheCard(attempt: number): string {
  if (attempt < 3) throw new TypeError(`card declined on attempt ${attempt}`);
  return 'charged';
}

async function job(q: string, id: string): Promise<JobView> {
  const j = await f.queues.getJob(q, id);
  if (!j) throw new Error(`no job ${id}`);
  return j;
}

describe('a job that fails twice and then succeeds', () => {
  it('shows three attempts: starts increasing, durations, the worker, both errors with their stacks', async () => {
    const q = randomQueue('hist');
    const id = await f.queues.enqueue(q, { n: 1 });
    const { consumer } = await startConsumer(f.conn, q, async (j) => {
      await sleep(5);
      return chargeTheCard(j.attempt);
    }, { attempts: 5, backoff: 'f:10' });
    f.consumers.push(consumer);
    await eventually(async () => (await job(q, id)).status === 'done', 10_000, 'the job done');
    const j = await job(q, id);
    const h = j.attemptHistory;
    expect(h.map((a) => [a.attempt, a.outcome])).toEqual([[1, 'failed'], [2, 'failed'], [3, 'done']]);
    for (let i = 0; i < 3; i++) {
      expect(h[i].startedAt).toBeInstanceOf(Date);
      expect(h[i].endedAt).toBeInstanceOf(Date);
      expect(h[i].durationMs).toBeGreaterThanOrEqual(0);
      expect(h[i].durationMs).toBe(h[i].endedAt!.getTime() - h[i].startedAt!.getTime());
      if (i > 0) expect(h[i].startedAt!.getTime()).toBeGreaterThanOrEqual(h[i - 1].endedAt!.getTime());
    }
    expect(h[1].startedAt!.getTime()).toBeGreaterThan(h[0].startedAt!.getTime());
    expect(h[2].startedAt!.getTime()).toBeGreaterThan(h[1].startedAt!.getTime());
    for (const [i, a] of h.slice(0, 2).entries()) {
      expect(a.worker).toBe(`${hostname()}:${process.pid}`);
      expect(a.error).toBe(`TypeError: card declined on attempt ${i + 1}`);
      expect(a.stack).toContain('chargeTheCard');
      expect(a.stack).toContain(`card declined on attempt ${i + 1}`);
    }
    expect(h[2]).toMatchObject({ worker: undefined, error: undefined, stack: undefined });
    expect(j.startedAt).toEqual(h[2].startedAt);
    expect(h[2].endedAt).toEqual(j.finishedAt);
  });
});

describe('a job leased straight to a parked consumer (enqueue.lua)', () => {
  it('records its start too: the consumer asked for starts when it parked', async () => {
    const q = randomQueue('parkedhist');
    const { consumer } = await startConsumer(f.conn, q, async (j) => chargeTheCard(j.attempt + 1), { attempts: 3, backoff: 'f:10' });
    f.consumers.push(consumer);
    await eventually(async () => (await f.raw.zcard(queueKeys(q).parked)) > 0, 5000, 'the consumer parked');
    expect(await f.raw.hget(queueKeys(q).meta, 'stamp')).toBe('1');
    const id = await f.queues.enqueue(q, { n: 1 });
    await eventually(async () => (await job(q, id)).status === 'done', 10_000, 'the job done');
    const h = (await job(q, id)).attemptHistory;
    expect(h.map((a) => [a.attempt, a.outcome, a.startedAt instanceof Date])).toEqual([[1, 'failed', true], [2, 'done', true]]);
  });
});

describe('the failure paths', () => {
  it('records a lease the reaper took back as lease-expired, with its start and no worker', async () => {
    const q = randomQueue('reaped');
    const id = await f.queues.enqueue(q, { n: 1 });
    const k = queueKeys(q);
    const claimed = await wire.claim(f.conn.scriptClient, k, 1, 30);
    expect(claimed.jobs.map((c) => c.id)).toEqual([id]);
    const running = await job(q, id);
    expect(running.attemptHistory).toEqual([expect.objectContaining({ attempt: 1, outcome: 'running', endedAt: undefined })]);
    await sleep(60);
    expect((await wire.reap(f.conn.scriptClient, k, 10, 3, 1000)).requeued).toBe(1);
    const j = await job(q, id);
    expect(j.status).toBe('pending');
    expect(j.attemptHistory).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'lease-expired', worker: undefined, error: 'lease expired', stack: undefined }),
    ]);
    expect(j.attemptHistory[0].startedAt).toEqual(running.startedAt);
    expect(j.attemptHistory[0].durationMs).toBeGreaterThanOrEqual(30);
  });

  it('keeps the newest 10 of 13 failed attempts, in order', async () => {
    const q = randomQueue('bound');
    const id = await f.queues.enqueue(q, { n: 1 });
    const k = queueKeys(q);
    for (let i = 1; i <= 13; i++) {
      let c = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs[0];
      for (let tries = 0; !c && tries < 50; tries++) {
        await sleep(2); // its run-at (now + 0) is due from the next millisecond
        c = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs[0];
      }
      expect([i, c?.attempt]).toEqual([i, i]);
      const r = await wire.retry(f.conn.scriptClient, k, { id, token: c.token, error: `Error: fail ${i}`, fatal: false, worker: 'w:1', stack: `Error: fail ${i}\n    at step${i}` }, defaults);
      expect(r.outcome).toBe('retry');
    }
    const j = await job(q, id);
    expect(j.attemptHistory.map((a) => a.attempt)).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    expect(j.attemptHistory.map((a) => a.error)).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 12, 13].map((i) => `Error: fail ${i}`));
    expect(j.attemptHistory[9]).toMatchObject({ worker: 'w:1', stack: 'Error: fail 13\n    at step13', outcome: 'failed' });
  });

  it('cuts a long error to 1024 bytes in the history, never inside a character (the row keeps it whole)', async () => {
    const q = randomQueue('cut');
    const id = await f.queues.enqueue(q, { n: 1 });
    const k = queueKeys(q);
    const c = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs[0];
    const error = 'E'.repeat(1023) + 'é'.repeat(10); // the cut falls inside the first é
    await wire.retry(f.conn.scriptClient, k, { id, token: c.token, error, fatal: true }, defaults);
    const j = await job(q, id);
    expect(j.error).toBe(error);
    expect(j.attemptHistory).toEqual([expect.objectContaining({ outcome: 'failed', error: 'E'.repeat(1023), worker: undefined })]);
  });

  it('an old caller of retry (no worker, no stack) still records the attempt', async () => {
    const q = randomQueue('oldretry');
    const id = await f.queues.enqueue(q, { n: 1 });
    const k = queueKeys(q);
    const c = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs[0];
    const keys = [k.meta, k.active, k.scheduled, k.dead, k.wake, k.data, k.jobPrefix, k.job(id), k.events, k.cancelled];
    expect(await runScript(f.conn.scriptClient, 'retry', keys, [PROTOCOL_VERSION, id, c.token, 'Error: x', '0', 3, 'f:0', 1000])).toEqual([1, expect.any(Number)]);
    expect((await job(q, id)).attemptHistory).toEqual([expect.objectContaining({ attempt: 1, outcome: 'failed', error: 'Error: x', worker: undefined, stack: undefined })]);
  });
});

describe("retry's worker and stack arguments", () => {
  it('refuses a bad worker or stack with EMQ_BAD_ARG and writes nothing', async () => {
    const q = randomQueue('badargs');
    const id = await f.queues.enqueue(q, { n: 1 });
    const k = queueKeys(q);
    const c = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs[0];
    const keys = [k.meta, k.active, k.scheduled, k.dead, k.wake, k.data, k.jobPrefix, k.job(id), k.events, k.cancelled];
    const base = [PROTOCOL_VERSION, id, c.token, 'Error: x', '0', 3, 'f:0', 1000];
    const before = { row: await f.raw.hgetall(k.job(id)), active: await f.raw.zrange(k.active, 0, -1), scheduled: await f.raw.zcard(k.scheduled) };
    const bad: [string, (string | number)[]][] = [
      ['a newline in the worker', ['host\n:1', '']],
      ['an escape in the worker', ['host\x1b[31m:1', '']],
      ['a worker of 129 bytes', ['w'.repeat(129), '']],
      ['a stack of 2049 bytes', ['w', 's'.repeat(2049)]],
      ['an eleventh argument', ['w', 's', 'x']],
    ];
    for (const [what, extra] of bad) {
      const code = await runScript(f.conn.scriptClient, 'retry', keys, [...base, ...extra]).then(
        () => 'resolved',
        (e: { code?: string }) => e.code,
      );
      expect([what, code]).toEqual([what, 'EMQ_BAD_ARG']);
    }
    expect({ row: await f.raw.hgetall(k.job(id)), active: await f.raw.zrange(k.active, 0, -1), scheduled: await f.raw.zcard(k.scheduled) }).toEqual(before);
    // The bounds themselves pass: 128 bytes of worker, 2048 of stack (newlines in a stack are fine).
    const stack = ('at x\n').repeat(409) + 'abc';
    expect(await runScript(f.conn.scriptClient, 'retry', keys, [...base, 'w'.repeat(128), stack])).toEqual([1, expect.any(Number)]);
    expect((await job(q, id)).attemptHistory).toEqual([expect.objectContaining({ worker: 'w'.repeat(128), stack })]);
  });
});

describe('a history planted by hand', () => {
  let d: DashboardTestApp | undefined;
  afterAll(async () => {
    await d?.app.close();
  });

  it('never fails a read: the API, the CLI and the dashboard show it as unreadable text', async () => {
    const q = randomQueue('planted');
    const [good, junk] = [await f.queues.enqueue(q, { n: 1 }), await f.queues.enqueue(q, { n: 2 })];
    const k = queueKeys(q);
    const claimed = await wire.claim(f.conn.scriptClient, k, 2, 30_000);
    for (const c of claimed.jobs) await wire.retry(f.conn.scriptClient, k, { id: c.id, token: c.token, error: 'Error: once', fatal: true, worker: 'w:2', stack: 'Error: once\n    at planted' }, defaults);
    // One readable record, then junk with an escape sequence; a row whose history is only junk;
    // a row whose `started` is not an instant.
    await f.raw.hset(k.job(good), 'hist', (await f.raw.hget(k.job(good), 'hist')) + '99:\x1b[31mred');
    await f.raw.hset(k.job(junk), 'hist', '12:3:1', 'started', 'soon');
    const g = await job(q, good);
    expect(g.attemptHistory).toEqual([expect.objectContaining({ attempt: 1, outcome: 'failed', worker: 'w:2' })]);
    expect(g.attemptHistoryError).toMatchObject({ code: 'EMQ_BAD_PAYLOAD', raw: expect.stringContaining('\x1b[31mred') });
    const b = await job(q, junk);
    expect(b.attemptHistory).toEqual([]);
    expect(b.startedAt).toBeUndefined();
    expect(b.attemptHistoryError?.raw).toBe('12:3:1');

    const cli = await runCli(['--url', testUrl(), 'job', q, good]);
    expect([cli.code, cli.stderr]).toEqual([0, '']);
    expect(cli.stdout).toContain('attempt history unreadable');
    expect(cli.stdout).toContain('\\x1b[31mred');
    expect(cli.stdout).not.toContain('\x1b');
    expect(cli.stdout).toMatch(/#1 failed {2}started \d{4}-.*worker w:2/);
    expect(cli.stdout).toContain('        at planted');
    expect((await runCli(['--url', testUrl(), 'job', q, junk])).code).toBe(0);
    expect(MAIN).toBeTruthy();

    d = await startDashboardApp({ path: '/ops' });
    for (const id of [good, junk]) {
      const res = await fetch(`${d.origin}/ops/queues/${q}/jobs/${id}`, { headers: { 'x-let-in': 'yes' } });
      const page = await res.text();
      expect([id, res.status]).toEqual([id, 200]);
      expect(page).toContain('id="attempts-unreadable"');
      expect(page).not.toContain('\x1b');
    }
    await new QueueAdmin(f.conn, f.queues).job(q, good); // the admin read too
  });
});
