import { BusService, QueueAdmin } from '../../src/index.js';
import { eventIdOf, queueKeys, runScript, topicKeys, wire } from '../../src/protocol.js';
import { PROTOCOL_VERSION } from '../../src/core/scripts.js';
import { failureLog } from '../../src/queue/consumer/index.js';
import { runCli } from '../helpers/cli.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

// Issue 38, items 2 to 4: control characters escaped in CLI output and log lines; destructive
// commands ask (or want --yes) and have --dry-run; cancel from the CLI and the admin API.
const f = queueFixture();
const LONG = 180_000;
const cli = (...args: string[]) => runCli(['--url', testUrl(), ...args]); // stdin is a pipe: never a terminal
const DEFAULTS = { maxAttempts: 3, backoff: 'f:50', deadCap: 1000 };
const PLANTED = 'Error: \u001b[2J\u001b]0;owned\u0007\u001b[32mALL JOBS OK\nsecond line\r\u009b1m';
const ZERO = { scheduled: 0, pending: 0, active: 0, done: 0, dead: 0, cancelled: 0, waiting: 0 };

/** Buries one job per error text; resolves to their ids. */
async function bury(q: string, errors: string[]): Promise<string[]> {
  const k = queueKeys(q);
  const ids = await f.queues.enqueueMany(q, errors.map((_, i) => ({ payload: { i } })));
  const { jobs } = await wire.claim(f.conn.scriptClient, k, errors.length, 30_000);
  for (const [i, j] of jobs.entries()) await wire.retry(f.conn.scriptClient, k, { id: j.id, token: j.token, error: errors[i], fatal: true }, DEFAULTS);
  return ids;
}

/** Completes `n` fresh jobs of `q` (status done). */
async function complete(q: string, n: number): Promise<void> {
  const k = queueKeys(q);
  await f.queues.enqueueMany(q, Array.from({ length: n }, (_, i) => ({ payload: { i } })));
  const { jobs } = await wire.claim(f.conn.scriptClient, k, n, 30_000);
  await wire.complete(f.conn.scriptClient, k, 1000, jobs.map((j) => ({ id: j.id, token: j.token, result: '' })));
}

/** True when `text` holds no C0 control but the newline ending each line, no DEL and no C1 control. */
const clean = (text: string): boolean => !/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/.test(text);

describe('control characters are shown as visible escapes', () => {
  it('in the error column of `jobs` and the rows of `job`; one table row stays one line', async () => {
    const q = randomQueue('esc');
    const [id] = await bury(q, [PLANTED]);
    const listed = await cli('jobs', q, '--status', 'dead');
    expect(listed.code).toBe(0);
    expect(clean(listed.stdout)).toBe(true);
    expect(listed.stdout).toContain('Error: \\x1b[2J\\x1b]0;owned\\x07\\x1b[32mALL JOBS OK\\nsecond line\\r\\x9b1m');
    expect(listed.stdout.split('\n').filter(Boolean).every((l) => /^[│┌├└]/.test(l))).toBe(true); // no line of the table was split or moved
    const detail = await cli('job', q, id);
    expect(detail.code).toBe(0);
    expect(clean(detail.stdout)).toBe(true);
    expect(detail.stdout).toContain('\\x1b]0;owned\\x07');
    expect(JSON.parse((await cli('--json', 'job', q, id)).stdout)).toMatchObject({ error: PLANTED }); // JSON keeps the text, escaped by JSON itself
  }, LONG);

  it('in the failure log: a handler throwing a message with \\n logs one line per failure', async () => {
    const q = randomQueue('esc-log');
    const lines: string[] = [];
    const logger = { warn: (m: string) => lines.push(m), error: (m: string) => lines.push(m) };
    const { consumer } = await startConsumer(f.conn, q, () => {
      throw new Error('boom\njob 123 of "billing" is done (forged)\u001b[2J');
    }, { attempts: 2, onFailure: failureLog(f.conn, logger) });
    f.consumers.push(consumer);
    const id = await f.queues.enqueue(q, {});
    await eventually(async () => lines.filter((l) => l.includes(id)).length === 2, 10_000, 'a retry and a burial logged');
    for (const line of lines.filter((l) => l.includes(id))) {
      expect(line).not.toMatch(/[\n\r\u001b]/);
      expect(line).toMatch(/: Error: boom\\njob 123 of "billing" is done \(forged\)\\x1b\[2J$/);
    }
  });
});

describe('destructive commands ask first', () => {
  it('purge: no bound is refused with a hint; without --yes off a terminal it refuses and says what it would delete; --dry-run writes nothing; --yes acts', async () => {
    const q = randomQueue('purge');
    await complete(q, 3);
    const hint = await cli('purge', q);
    expect(hint).toMatchObject({ code: 1, stdout: '' });
    expect(hint.stderr).toContain('purge needs a bound: --older-than <duration> (e.g. 7d), or --all');
    expect(await cli('purge', q, '--all', '--older-than', '1h')).toMatchObject({ code: 1, stderr: 'echomq: give --older-than or --all, not both\n' });
    const refused = await cli('purge', q, '--all');
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toBe(`echomq: this would delete 3 done job(s) of queue ${q} (all of them): pass --yes to do it (or --dry-run to see it without writing)\n`);
    expect(await cli('purge', q, '--older-than', '1h')).toMatchObject({ code: 0, stdout: `nothing to do: would delete 0 done job(s) of queue ${q} finished over 1h ago\n` });
    expect(await cli('purge', q, '--all', '--dry-run')).toMatchObject({ code: 0, stdout: `dry run: would delete 3 done job(s) of queue ${q} (all of them) (nothing written)\n` });
    expect(JSON.parse((await cli('--json', 'purge', q, '--older-than', '1h', '--dry-run')).stdout)).toEqual({ ok: true, dryRun: true, count: 0, purged: 0 });
    expect((await f.queues.counts(q)).done).toBe(3);
    expect(await cli('purge', q, '--older-than', '1h', '--yes')).toMatchObject({ code: 0, stdout: 'purged 0 job(s)\n' });
    expect(await cli('purge', q, '--all', '--yes')).toMatchObject({ code: 0, stdout: 'purged 3 job(s)\n' });
    expect(await f.queues.counts(q)).toEqual(ZERO);
    expect(await cli('purge', q, '--all')).toMatchObject({ code: 0, stdout: `nothing to do: would delete 0 done job(s) of queue ${q} (all of them)\n` });
  }, LONG);

  it('drain, retry --all-dead and remove: refused without --yes (nothing written), --dry-run counts, --yes acts', async () => {
    const q = randomQueue('drain');
    const [dead] = await bury(q, ['Error: a', 'Error: b']);
    await f.queues.enqueueMany(q, [{ payload: 1 }, { payload: 2 }, { payload: 3 }]);
    const drain = await cli('drain', q);
    expect(drain).toMatchObject({ code: 1, stderr: `echomq: this would delete 3 waiting job(s) of queue ${q} (drain): pass --yes to do it (or --dry-run to see it without writing)\n` });
    expect(await cli('drain', q, '--dry-run')).toMatchObject({ code: 0, stdout: `dry run: would delete 3 waiting job(s) of queue ${q} (drain) (nothing written)\n` });
    expect(await cli('retry', q, '--all-dead')).toMatchObject({ code: 1, stderr: expect.stringContaining(`this would retry 2 dead job(s) of queue ${q}: pass --yes`) });
    expect(await cli('remove', q, dead)).toMatchObject({ code: 1, stderr: expect.stringContaining(`this would remove job ${dead} (dead) of queue ${q} with its row and payload: pass --yes`) });
    expect(await cli('remove', q, dead, '--dry-run')).toMatchObject({ code: 0, stdout: expect.stringContaining('dry run: would remove job') });
    expect(await f.queues.counts(q)).toEqual({ ...ZERO, pending: 3, dead: 2 });
    expect(await cli('remove', q, dead, '--yes')).toMatchObject({ code: 0, stdout: `removed ${dead}\n` });
    expect(await cli('retry', q, '--all-dead', '-y')).toMatchObject({ code: 0, stdout: 'retried 1 dead job(s)\n' });
    expect(await cli('drain', q, '--yes')).toMatchObject({ code: 0, stdout: 'drained 3 job(s)\n' });
    expect(await cli('drain', q, '--yes', '--dry-run')).toMatchObject({ code: 0, stdout: expect.stringMatching(/^dry run: would delete 0 waiting/) }); // --dry-run wins
  }, LONG);

  it('dead-letters --purge (and --replay --all): refused without --yes, --dry-run counts, --yes acts', async () => {
    const bus = new BusService(f.conn, { trimIntervalMs: 0 });
    try {
      const t = randomQueue('dl');
      const k = topicKeys(t);
      await bus.publishMany(t, [{ n: 1 }, { n: 2 }]);
      await f.raw.xgroup('CREATE', k.log, 'g', '0');
      const read = (await f.raw.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 2, 'STREAMS', k.log, '>')) as [string, [string, string[]][]][];
      for (const [sid] of read[0][1]) await runScript(f.conn.scriptClient, 'dead-letter', [k.meta, k.log, k.dead], [PROTOCOL_VERSION, 'g', 'c1', sid, eventIdOf(sid), 'Error: x', '0', '1000']);
      expect(await cli('dead-letters', t, '--purge', '--all')).toMatchObject({ code: 1, stderr: expect.stringContaining(`this would delete 2 dead letter(s) of topic ${t} (all of them): pass --yes`) });
      expect(await cli('dead-letters', t, '--replay', '--all')).toMatchObject({ code: 1, stderr: expect.stringContaining(`this would replay 2 dead letter(s) of topic ${t} (all of them) as new events, deleting them: pass --yes`) });
      expect(await cli('dead-letters', t, '--purge', '--all', '--dry-run')).toMatchObject({ code: 0, stdout: `dry run: would delete 2 dead letter(s) of topic ${t} (all of them) (nothing written)\n` });
      expect(await f.raw.xlen(k.dead)).toBe(2);
      expect(await cli('dead-letters', t, '--yes')).toMatchObject({ code: 1 }); // --yes goes with an action
      expect(await cli('dead-letters', t, '--purge', '--all', '--yes')).toMatchObject({ code: 0, stdout: 'purged 2 dead letter(s)\n' });
      expect(await f.raw.xlen(k.dead)).toBe(0);
    } finally {
      await bus.close();
    }
  }, LONG);
});

describe('cancel', () => {
  it('echomq cancel: a pending job is cancelled, a running one flagged (cooperative), a finished one refused (exit 4)', async () => {
    const q = randomQueue('cancel');
    const running = await f.queues.enqueue(q, { n: 0 });
    await wire.claim(f.conn.scriptClient, queueKeys(q), 1, 30_000);
    const [pending] = await f.queues.enqueueMany(q, [{ payload: 1 }]);
    const later = await f.queues.enqueue(q, { n: 2 }, { delay: 600_000 });
    expect(await cli('cancel', q, pending)).toMatchObject({ code: 1, stderr: expect.stringContaining(`this would cancel job ${pending} (pending) of queue ${q}: pass --yes`) });
    expect(await cli('cancel', q, pending, '--dry-run')).toMatchObject({ code: 0 });
    expect((await f.queues.getJob(q, pending))?.status).toBe('pending');
    expect(await cli('cancel', q, pending, '--yes')).toMatchObject({ code: 0, stdout: `cancelled ${pending}\n` });
    expect((await f.queues.getJob(q, pending))?.status).toBe('cancelled');
    expect(JSON.parse((await cli('--json', 'cancel', q, later, '--yes')).stdout)).toEqual({ ok: true, id: later, outcome: 'cancelled' });
    expect(await cli('cancel', q, running, '--yes')).toMatchObject({ code: 0, stdout: expect.stringContaining(`cancel requested for ${running}: it is running`) });
    expect(await f.queues.getJob(q, running)).toMatchObject({ status: 'active', cancelRequested: true });
    expect(await cli('cancel', q, pending, '--yes')).toMatchObject({ code: 4, stderr: `echomq: job ${pending} has already finished (cancelled): not cancelled\n` });
    expect(await cli('cancel', q, f.queues.mintId(), '--yes')).toMatchObject({ code: 2 });
    expect(await cli('cancel', q, 'jobzzzzzzzzzzz', '--yes')).toMatchObject({ code: 1, stderr: expect.stringMatching(/^echomq: EMQ_BAD_ID /) });
  }, LONG);

  it('QueueAdmin.cancel: cancelled, flagged, finished; unknown job EMQ_NOT_FOUND, bad id EMQ_BAD_ID, unknown queue EMQ_NOT_FOUND', async () => {
    const admin = new QueueAdmin(f.conn, f.queues);
    const q = randomQueue('admin-cancel');
    const active = await f.queues.enqueue(q, { n: 0 });
    await wire.claim(f.conn.scriptClient, queueKeys(q), 1, 30_000);
    const pending = await f.queues.enqueue(q, { n: 1 });
    expect(await admin.cancel(q, pending)).toBe('cancelled');
    expect(await admin.cancel(q, pending)).toBe('finished');
    expect(await admin.cancel(q, active)).toBe('flagged');
    await expect(admin.cancel(q, f.queues.mintId())).rejects.toMatchObject({ code: 'EMQ_NOT_FOUND' });
    await expect(admin.cancel(q, 'jobzzzzzzzzzzz')).rejects.toMatchObject({ code: 'EMQ_BAD_ID' });
    await expect(admin.cancel(randomQueue('nobody'), pending)).rejects.toMatchObject({ code: 'EMQ_NOT_FOUND' });
    expect((await f.queues.counts(q)).cancelled).toBe(1);
  });
});
