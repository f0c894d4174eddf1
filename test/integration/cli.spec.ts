import { globalKeys, queueKeys, wire } from '../../src/protocol/index.js';
import { runCli } from '../helpers/cli.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

const f = queueFixture();
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
    const table = await runCli(['queues', '--limit', '1000'], { VALKEY_URL: testUrl() });
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout).toMatch(/│ queue\s+│ paused\s+│ pending\s+│ scheduled\s+│ active\s+│ done\s+│ dead\s+│ cancelled\s+│/);
    expect(table.stdout).toMatch(new RegExp(`│ ${q}\\s+│\\s+│ 2\\s+│ 1\\s+│ 0\\s+│ 0\\s+│ 1\\s+│ 0\\s+│`));
    const json = await cli('--json', 'queues', '--limit', '1000');
    const page = JSON.parse(json.stdout) as { items: { name: string; counts: Record<string, number> }[] };
    expect(page.items.find((i) => i.name === q)?.counts).toEqual({ scheduled: 1, pending: 2, active: 0, done: 0, dead: 1, cancelled: 0 });
  });

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
    expect(await cli('drain', q)).toMatchObject({ code: 0, stdout: 'drained 2 job(s)\n' });
    const { jobs } = await wire.claim(f.conn.scriptClient, queueKeys(q), 10, 30_000); // the retried and the promoted job
    await wire.complete(f.conn.scriptClient, queueKeys(q), 1000, jobs.map((j) => ({ id: j.id, token: j.token, result: '' })));
    expect(await cli('purge', q, '--status', 'done', '--older-than', '1h')).toMatchObject({ code: 0, stdout: 'purged 0 job(s)\n' });
    expect(await cli('purge', q, '--status', 'done')).toMatchObject({ code: 0, stdout: 'purged 2 job(s)\n' });
    expect(await cli('remove', q, dead)).toMatchObject({ code: 2 }); // purged with its row
    expect(await f.queues.counts(q)).toEqual({ scheduled: 0, pending: 0, active: 0, done: 0, dead: 0, cancelled: 0 });
  });

  it('exit codes and one-line errors: usage 1, unknown queue or job 2, wrong URL 3, bad id 1', async () => {
    const { q } = await seeded();
    const unknown = randomQueue('nope');
    expect(await cli('jobs', unknown)).toEqual({ code: 2, stdout: '', stderr: `echomq: EMQ_NOT_FOUND no queue named ${unknown} (none announced it and it holds no data)\n` });
    const id = f.queues.mintId();
    expect(await cli('job', q, id)).toEqual({ code: 2, stdout: '', stderr: `echomq: EMQ_NOT_FOUND no job ${id} in queue ${q}\n` });
    expect(await cli('job', q, 'job123')).toMatchObject({ code: 1, stdout: '', stderr: expect.stringMatching(/^echomq: EMQ_BAD_ID [^\n]*\n$/) });
    expect(await cli('jobs', q, '--cursor', 'garbage!')).toMatchObject({ code: 1, stderr: expect.stringMatching(/^echomq: EMQ_BAD_CURSOR [^\n]*\n$/) });
    expect(await cli('jobs', 'a:b')).toMatchObject({ code: 1, stderr: expect.stringMatching(/^echomq: EMQ_BAD_NAME [^\n]*\n$/) });
    expect(await cli('jobs', q, '--status', 'sleeping')).toMatchObject({ code: 1, stderr: expect.stringContaining('--status must be one of') });
    expect(await cli('retry', q)).toMatchObject({ code: 1, stderr: 'echomq: give a job id or --all-dead (not both)\n' });
    expect((await cli('frobnicate')).code).toBe(1);
    expect((await cli('--help')).code).toBe(0);
    const wrong = await runCli(['--url', 'redis://user:secret@127.0.0.1:1', 'queues']);
    expect(wrong).toEqual({ code: 3, stdout: '', stderr: expect.stringMatching(/^echomq: EMQ_UNAVAILABLE cannot reach Valkey at redis:\/\/\*\*\*@127\.0\.0\.1:1: [^\n]*ECONNREFUSED[^\n]*\n$/) });
    expect(wrong.stderr).not.toContain('secret');
  });
});
