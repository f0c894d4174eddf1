import { BusService, CacheService } from '../../src/index.js';
import { eventIdOf, globalKeys, queueKeys, runScript, topicKeys, wire } from '../../src/protocol.js';
import { runCli } from '../helpers/cli.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';
import { PROTOCOL_VERSION } from '../../src/core/scripts.js';

const f = queueFixture();
/** Each run is a fresh node process (about 0.5 s, several seconds on a loaded machine). */
const LONG = 180_000;
const cli = (...args: string[]) => runCli(['--url', testUrl(), ...args]);
const DEFAULTS = { maxAttempts: 3, backoff: 'f:50', deadCap: 1000 };

/** A queue with two pending jobs, one scheduled and one dead; resolves to its name and the dead job's id. */
async function seeded(): Promise<{ q: string; dead: string; later: string }> {
  const q = randomQueue('cli');
  const k = queueKeys(q);
  const dead = await f.queues.enqueue(q, { html: '<script>x</script>' });
  const [j] = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs;
  await wire.retry(f.conn.scriptClient, k, { id: j.id, token: j.token, error: 'Error: boom', fatal: true }, DEFAULTS);
  await f.queues.enqueueMany(q, [{ payload: 1 }, { payload: 2 }]);
  const later = await f.queues.enqueue(q, { late: 1 }, { delay: 600_000 });
  return { q, dead, later };
}

describe('the echomq CLI, as a subprocess', () => {
  it('queues: a table by default, JSON with --json, the URL from VALKEY_URL', async () => {
    const { q } = await seeded();
    await eventually(async () => (await f.raw.zscore(globalKeys.queues, q)) !== null, 5000, 'announced'); // the enqueue's background write
    const table = await runCli(['queues', '--after', q.slice(0, -1), '--limit', '5'], { VALKEY_URL: testUrl() });
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout).toMatch(/│ queue\s+│ paused\s+│ paused lanes\s+│ pending\s+│ scheduled\s+│ active\s+│ done\s+│ dead\s+│ cancelled\s+│ waiting\s+│ error\s+│/);
    expect(table.stdout).toMatch(new RegExp(`│ ${q}\\s+│\\s+│\\s+│ 2\\s+│ 1\\s+│ 0\\s+│ 0\\s+│ 1\\s+│ 0\\s+│ 0\\s+│\\s+│`));
    const json = await cli('--json', 'queues', '--after', q.slice(0, -1), '--limit', '5');
    const page = JSON.parse(json.stdout) as { items: { name: string; counts: Record<string, number> }[] };
    expect(page.items.find((i) => i.name === q)?.counts).toEqual({ scheduled: 1, pending: 2, active: 0, done: 0, dead: 1, cancelled: 0, waiting: 0 });
  }, LONG);

  it('job shows a long error, payload and result whole (escaped), below the table', async () => {
    const q = randomQueue('cli-long');
    const k = queueKeys(q);
    const payload = { note: 'p'.repeat(300) + '<end of payload>' };
    const error = 'Error: ' + 'e'.repeat(400) + '\nat the end of the error';
    const result = JSON.stringify({ total: 'r'.repeat(250) + '<end of result>' });
    const dead = await f.queues.enqueue(q, payload);
    const [j] = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs;
    await wire.retry(f.conn.scriptClient, k, { id: j.id, token: j.token, error, fatal: true }, DEFAULTS);
    const done = await f.queues.enqueue(q, { short: 1 });
    const [d] = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs;
    await wire.complete(f.conn.scriptClient, k, 1000, [{ id: d.id, token: d.token, result }]);

    const shown = await cli('job', q, dead);
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    const escapedError = 'Error: ' + 'e'.repeat(400) + '\\nat the end of the error'; // the newline as a visible escape
    expect(shown.stdout).toContain(`\nerror:\n${escapedError}\n`);
    expect(shown.stdout).toContain(`\npayload:\n${JSON.stringify(payload)}\n`);
    expect(shown.stdout).toMatch(/│ error\s+│ \(\d+ characters: in full below\)/);
    expect(shown.stdout).not.toContain('...');
    expect(shown.stdout).toMatch(/│ status\s+│ dead/); // short fields stay in the table
    const finished = await cli('job', q, done);
    expect(finished.stdout).toContain(`\nresult:\n${result}\n`);
    expect(finished.stdout).toMatch(/│ payload\s+│ {"short":1}\s+│/);
  }, LONG);

  it('jobs, job, retry, promote, remove, pause, resume, drain, purge', async () => {
    const { q, dead, later } = await seeded();
    const listed = await cli('jobs', q, '--status', 'dead');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(dead);
    expect(listed.stdout).toContain('Error: boom');
    const page = JSON.parse((await cli('--json', 'jobs', q, '--status', 'pending', '--limit', '1')).stdout) as { jobs: unknown[]; next: string };
    expect(page.jobs).toHaveLength(1);
    const next = JSON.parse((await cli('--json', 'jobs', q, '--status', 'pending', '--limit', '1', '--cursor', page.next)).stdout) as { jobs: unknown[]; next?: string };
    expect([next.jobs.length, next.next]).toEqual([1, undefined]);
    const detail = await cli('job', q, dead);
    expect(detail.code).toBe(0);
    expect(detail.stdout).toMatch(/│ status\s+│ dead/);
    expect(detail.stdout).toContain('<script>x</script>'); // payloads are shown as text
    expect(JSON.parse((await cli('--json', 'job', q, dead)).stdout)).toMatchObject({ id: dead, status: 'dead', error: 'Error: boom', payload: { html: '<script>x</script>' } });
    expect(await cli('retry', q, dead)).toMatchObject({ code: 0, stdout: `retried ${dead}\n` });
    expect(await cli('retry', q, dead)).toMatchObject({ code: 4, stderr: `echomq: job ${dead} is not dead\n` });
    expect(await cli('promote', q, later)).toMatchObject({ code: 0 });
    expect(await cli('--json', 'pause', q)).toMatchObject({ code: 0, stdout: JSON.stringify({ ok: true, changed: true }, null, 2) + '\n' });
    expect((await f.queues.counts(q)).pending).toBe(2);
    expect(await f.raw.hget(queueKeys(q).meta, 'paused')).toBe('1');
    expect(await cli('resume', q)).toMatchObject({ code: 0, stdout: `${q} resumed\n` });
    expect(await cli('drain', q, '--yes')).toMatchObject({ code: 0, stdout: 'drained 2 job(s)\n' });
    const { jobs } = await wire.claim(f.conn.scriptClient, queueKeys(q), 10, 30_000); // the retried and the promoted job
    await wire.complete(f.conn.scriptClient, queueKeys(q), 1000, jobs.map((j) => ({ id: j.id, token: j.token, result: '' })));
    expect(await cli('purge', q, '--status', 'done', '--older-than', '1h', '--yes')).toMatchObject({ code: 0, stdout: 'purged 0 job(s)\n' });
    expect(await cli('purge', q, '--status', 'done', '--all', '--yes')).toMatchObject({ code: 0, stdout: 'purged 2 job(s)\n' });
    expect(await cli('remove', q, dead, '--yes')).toMatchObject({ code: 2 }); // purged with its row
    expect(await f.queues.counts(q)).toEqual({ scheduled: 0, pending: 0, active: 0, done: 0, dead: 0, cancelled: 0, waiting: 0 });
  }, LONG);

  it('exit codes and one-line errors: usage 1, unknown queue or job 2, wrong URL 3, bad id 1', async () => {
    const { q } = await seeded();
    const unknown = randomQueue('nope');
    expect(await cli('jobs', unknown)).toEqual({ code: 2, stdout: '', stderr: `echomq: EMQ_NOT_FOUND no queue named ${unknown} (none announced it and it holds no data)\n` });
    const id = f.queues.mintId();
    expect(await cli('job', q, id)).toEqual({ code: 2, stdout: '', stderr: `echomq: EMQ_NOT_FOUND no job ${id} in queue ${q}\n` });
    expect(await cli('job', q, 'jobzzzzzzzzzzz')).toMatchObject({ code: 1, stdout: '', stderr: expect.stringMatching(/^echomq: EMQ_BAD_ID [^\n]*\n$/) });
    // Any other printable string is a business id: unknown is not found, a held one shows its job.
    expect(await cli('job', q, 'order-404')).toEqual({ code: 2, stdout: '', stderr: `echomq: EMQ_NOT_FOUND no job order-404 in queue ${q}\n` });
    const byRef = await f.queues.enqueue(q, { r: 1 }, { id: 'order-42' });
    const shown = await cli('job', q, 'order-42');
    expect([shown.code, shown.stdout.includes(byRef), shown.stdout.includes('order-42')]).toEqual([0, true, true]);
    expect(await cli('jobs', q, '--cursor', 'garbage!')).toMatchObject({ code: 1, stderr: expect.stringMatching(/^echomq: EMQ_BAD_CURSOR [^\n]*\n$/) });
    expect(await cli('jobs', 'a:b')).toMatchObject({ code: 1, stderr: expect.stringMatching(/^echomq: EMQ_BAD_NAME [^\n]*\n$/) });
    expect(await cli('jobs', q, '--status', 'sleeping')).toMatchObject({ code: 1, stderr: expect.stringContaining('--status must be one of') });
    expect(await cli('retry', q)).toMatchObject({ code: 1, stderr: 'echomq: give a job id or --all-dead (not both)\n' });
    expect((await cli('frobnicate')).code).toBe(1);
    expect((await cli('--help')).code).toBe(0);
    const wrong = await runCli(['--url', 'redis://user:secret@127.0.0.1:1', 'queues']);
    expect(wrong).toEqual({ code: 3, stdout: '', stderr: expect.stringMatching(/^echomq: EMQ_UNAVAILABLE cannot reach Valkey at redis:\/\/\*\*\*@127\.0\.0\.1:1: [^\n]*ECONNREFUSED[^\n]*\n$/) });
    expect(wrong.stderr).not.toContain('secret');
  }, LONG);

  it('topics, groups, dead-letters (list, --replay, --purge), retention, cache stats and invalidate', async () => {
    const bus = new BusService(f.conn, { trimIntervalMs: 0 });
    const cache = new CacheService(f.conn);
    try {
      const t = randomQueue('cli-topic');
      const k = topicKeys(t);
      await bus.publishMany(t, [{ n: 1 }, { n: 2 }]);
      await f.raw.xgroup('CREATE', k.log, 'billing', '0');
      const read = (await f.raw.xreadgroup('GROUP', 'billing', 'c1', 'COUNT', 1, 'STREAMS', k.log, '>')) as [string, [string, string[]][]][];
      const sid = read[0][1][0][0];
      await runScript(f.conn.scriptClient, 'dead-letter', [k.meta, k.log, k.dead], [PROTOCOL_VERSION, 'billing', 'c1', sid, eventIdOf(sid), 'Error: card declined', '0', '1000']);
      await eventually(async () => (await f.raw.zscore(globalKeys.topics, t)) !== null, 5000, 'announced');
      const topics = await cli('topics', '--after', t.slice(0, -1), '--limit', '5');
      expect(topics.stdout).toMatch(new RegExp(`│ ${t}\\s+│ 2\\s+│ \\d+\\s+│ 0\\s+│ 0\\s+│ evt\\w{11}\\s+│ 1\\s+│ 1\\s+│\\s+│`));
      const groups = await cli('groups', t);
      expect(groups.stdout).toMatch(/│ billing\s+│ 1\s+│ 0\s+│ 1\s+│ evt\w{11}\s+│/);
      expect(JSON.parse((await cli('--json', 'groups', t)).stdout)).toEqual([{ name: 'billing', consumers: 1, pending: 0, lag: 1, lastDeliveredId: eventIdOf(sid) }]);
      const dead = await cli('dead-letters', t);
      expect(dead.stdout).toContain('Error: card declined');
      expect(await cli('dead-letters', t, '--replay', '--all', '--yes')).toMatchObject({ code: 0, stdout: 'replayed 1 dead letter(s)\n' });
      expect(await f.raw.xlen(k.log)).toBe(3);
      expect(await cli('dead-letters', t, '--purge')).toMatchObject({ code: 1, stderr: 'echomq: give dead ids or --all (not both)\n' });
      expect(await cli('--json', 'retention', t, '--max-len', '500')).toMatchObject({ code: 0, stdout: JSON.stringify({ maxLen: 500, archiveMaxAgeMs: 604_800_000, archiveMaxBytes: 67_108_864 }, null, 2) + '\n' });
      expect(await cli('groups', randomQueue('no-topic'))).toMatchObject({ code: 2, stderr: expect.stringMatching(/^echomq: EMQ_NOT_FOUND no topic named /) });
      const ns = randomQueue('cli-ns');
      await cache.set('k1', 1, { namespace: ns });
      await eventually(async () => (await f.raw.zscore(globalKeys.caches, ns)) !== null, 5000, 'announced');
      expect(await cli('cache', 'invalidate', ns, 'k1')).toMatchObject({ code: 0, stdout: `invalidated ${ns}:k1\n` });
      expect(await cache.get('k1', { namespace: ns })).toBeUndefined();
      const stats = await cli('cache', 'stats', '--after', ns.slice(0, -1), '--limit', '5');
      expect(stats.stdout).toMatch(new RegExp(`│ ${ns}\\s+│ 2\\s+│ 2\\s+│ \\d{4}-`));
      expect(await cli('cache', 'invalidate', randomQueue('no-ns'), 'k')).toMatchObject({ code: 2 });
    } finally {
      await Promise.all([bus.close(), cache.close()]);
    }
  }, LONG);
});
