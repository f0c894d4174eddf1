/**
 * Issue 38 #1: bad data anyone with the base `~{emq}:*` grant (or an operator by hand) can plant —
 * registry entries that are not names (`ZADD {emq}:queues 0 'bad name!'`, a control character,
 * 200 characters), keys of another type (WRONGTYPE), a job row that is a list, a payload that is
 * not JSON, index members that are not job ids — never fails a page or a command and never
 * crashes a process: every admin call, every reading CLI command and every dashboard page
 * (mounted in a Nest app and standalone) keeps running and shows the bad entry as such, counted
 * and logged once; the stored history (charts, `echomq stats`) skips planted stats keys of another
 * type and fields that hold no integer.
 */
import { BusAdmin, BusService, CacheAdmin, CacheService, EchoMqError, QueueAdmin } from '../../src/index.js';
import { queueKeys } from '../../src/core/keys.js';
import { freePort } from '../../src/testing.js';
import { spawnScript } from '../helpers/child.js';
import { MAIN, runCli } from '../helpers/cli.js';
import { startDashboardApp, type DashboardTestApp } from '../helpers/dashboard.js';
import { plantBadEntries, type BadEntries } from '../helpers/bad-entries.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { rawClient, testUrl } from '../helpers/valkey.js';

const f = queueFixture();
const raw = rawClient(); // its own: the fixture's closes before this file's afterAll
let bad: BadEntries;
let admin: QueueAdmin;
let bus: BusAdmin;
let caches: CacheAdmin;
let busService: BusService;
let cacheService: CacheService;
const warnings: string[] = [];
const rejections: unknown[] = [];
const onRejection = (reason: unknown): void => void rejections.push(reason);

beforeAll(async () => {
  process.on('unhandledRejection', onRejection);
  f.conn.logger = { warn: (m) => void warnings.push(m) };
  bad = await plantBadEntries(raw, f.conn, f.queues);
  admin = new QueueAdmin(f.conn, f.queues);
  busService = new BusService(f.conn, { trimIntervalMs: 0 });
  cacheService = new CacheService(f.conn);
  bus = new BusAdmin(f.conn, busService);
  caches = new CacheAdmin(f.conn, cacheService);
});
afterAll(async () => {
  await bad?.clean();
  await raw.quit();
  await busService?.close();
  await cacheService?.close();
  process.off('unhandledRejection', onRejection);
});
afterEach(async () => {
  await new Promise((r) => setTimeout(r, 50)); // a stray rejection would surface by now
  expect(rejections).toEqual([]);
});

const codeOf = (act: () => Promise<unknown>): Promise<string> =>
  act().then(
    () => 'resolved',
    (e: unknown) => (e instanceof EchoMqError ? e.code : `untyped: ${String(e)}`),
  );

describe('the admin API', () => {
  it('list shows each bad registry entry as an item with its problem, counts them, logs each once, and reads the rest', async () => {
    const page = await admin.list({ after: bad.prefix, limit: 1000 });
    const by = new Map(page.items.map((i) => [i.name, i]));
    for (const n of bad.badNames) expect(by.get(n)).toMatchObject({ name: n, problem: 'invalid name', error: expect.stringMatching(/^EMQ_BAD_NAME /), counts: { pending: 0 } });
    expect(by.get(bad.wrongType)).toMatchObject({ problem: 'unreadable', error: expect.stringMatching(/^EMQ_WRONGTYPE /) });
    expect(by.get(bad.good)).toMatchObject({ paused: false, counts: { pending: 1, dead: 4 } });
    expect(by.get(bad.good)?.error).toBeUndefined();
    expect(page.unreadable).toBeGreaterThanOrEqual(4);
    await admin.list({ after: bad.prefix, limit: 1000 });
    for (const n of [...bad.badNames, bad.wrongType]) expect(warnings.filter((w) => w.includes(JSON.stringify(n.slice(0, 120))))).toHaveLength(1);
  });

  it('pages through a bad entry: a page ending on it hands out a `next` that the next page accepts', async () => {
    const first = await admin.list({ after: bad.prefix, limit: 1 }); // `<prefix>\x1b…` sorts first, then `<prefix> bad name!`
    expect(first.items.map((i) => i.name)).toEqual([bad.badNames[1]]);
    expect(first.next).toBe(bad.badNames[1]);
    const second = await admin.list({ after: first.next, limit: 1 });
    expect(second.items.map((i) => [i.name, i.problem])).toEqual([[bad.badNames[0], 'invalid name']]);
    expect(await codeOf(() => admin.list({ after: '' }))).toBe('EMQ_BAD_NAME');
  });

  it('a job listing shows a row of another type, a member that is not an id and a bad payload as rows; the page is served', async () => {
    const page = await admin.jobs(bad.good, { status: 'dead', limit: 50 });
    const by = new Map(page.jobs.map((j) => [j.id, j]));
    expect(by.get(bad.rowIsList)).toMatchObject({ status: 'dead', unreadable: expect.stringMatching(/^EMQ_WRONGTYPE /) });
    expect(by.get('not-a-job-id')).toMatchObject({ unreadable: expect.stringMatching(/^EMQ_BAD_ID /) });
    expect(by.get(bad.badPayload)?.unreadable).toBeUndefined();
    expect(by.get(bad.dead)?.unreadable).toBeUndefined();
    // Paging one by one reaches the end: the cursor skips over what it cannot name.
    let cursor = (await admin.jobs(bad.good, { status: 'dead', limit: 1 })).next;
    let seen = 1;
    while (cursor && seen < 10) {
      const p = await admin.jobs(bad.good, { status: 'dead', limit: 1, cursor });
      cursor = p.next;
      seen++;
    }
    expect(seen).toBeLessThan(10);
    for (const s of ['pending', 'scheduled', 'active', 'done', 'cancelled'] as const) await admin.jobs(bad.good, { status: s });
  });

  it('single reads answer typed errors or the data as it is; no call on a bad name or bad data rejects untyped', async () => {
    expect((await admin.job(bad.good, bad.badPayload)).payloadError).toMatchObject({ code: 'EMQ_BAD_PAYLOAD', raw: 'not json{' });
    expect(await codeOf(() => admin.job(bad.good, bad.rowIsList))).toBe('EMQ_WRONGTYPE');
    expect(await codeOf(() => admin.info(bad.wrongType))).toBe('EMQ_WRONGTYPE');
    expect(await codeOf(() => admin.jobs(bad.wrongType, { status: 'done' }))).toBe('EMQ_WRONGTYPE');
    const id = bad.dead;
    const onBadName: [string, () => Promise<unknown>][] = [
      ['info', () => admin.info(bad.badNames[0])],
      ['jobs', () => admin.jobs(bad.badNames[0], { status: 'dead' })],
      ['job', () => admin.job(bad.badNames[0], id)],
      ['pause', () => admin.pause(bad.badNames[0])],
      ['resume', () => admin.resume(bad.badNames[0])],
      ['drain', () => admin.drain(bad.badNames[0])],
      ['retry', () => admin.retry(bad.badNames[0], id)],
      ['retryDead', () => admin.retryDead(bad.badNames[0])],
      ['promote', () => admin.promote(bad.badNames[0], id)],
      ['remove', () => admin.remove(bad.badNames[0], id)],
      ['purge', () => admin.purge(bad.badNames[0], { status: 'done', olderThanMs: 0 })],
      ['topic', () => bus.topic(bad.badTopic)],
      ['groups', () => bus.groups(bad.badTopic)],
      ['deadLetters', () => bus.deadLetters(bad.badTopic)],
      ['retention', () => bus.retention(bad.badTopic)],
      ['namespace', () => caches.namespace(bad.badNs)],
    ];
    for (const [what, act] of onBadName) expect([what, await codeOf(act)]).toEqual([what, 'EMQ_BAD_NAME']);
    expect(await codeOf(() => bus.topic(bad.wrongTopic))).toBe('EMQ_WRONGTYPE');
    expect(await codeOf(() => caches.namespace(bad.wrongNs))).toBe('EMQ_WRONGTYPE');
    expect(await bus.groups(bad.topic)).toEqual([expect.objectContaining({ name: 'g1', lag: 2 })]);
  });

  it('topics and cache stats show their bad entries as items', async () => {
    const topics = await bus.topics({ after: bad.prefix, limit: 1000 });
    const t = new Map(topics.items.map((i) => [i.name, i]));
    expect(t.get(bad.badTopic)).toMatchObject({ problem: 'invalid name', error: expect.stringMatching(/^EMQ_BAD_NAME /) });
    expect(t.get(bad.wrongTopic)).toMatchObject({ problem: 'unreadable', error: expect.stringMatching(/^EMQ_WRONGTYPE /) });
    expect(t.get(bad.topic)).toMatchObject({ length: 2, groups: 1 });
    expect(topics.unreadable).toBeGreaterThanOrEqual(2);
    const stats = await caches.stats({ after: bad.prefix, limit: 1000 });
    const n = new Map(stats.items.map((i) => [i.name, i]));
    expect(n.get(bad.badNs)).toMatchObject({ problem: 'invalid name' });
    expect(n.get(bad.wrongNs)).toMatchObject({ problem: 'unreadable', error: expect.stringMatching(/^EMQ_WRONGTYPE /) });
  });
});

describe('the stored history', () => {
  it('reads over bad registry entries, and skips (counts) a stats key of another type and fields that hold no integer', async () => {
    // Planted here for the rest of the file too: the dashboard pages and `echomq stats` read them.
    const k = queueKeys(bad.good);
    const minute = Math.floor(Date.now() / 60_000);
    await raw.set(k.statsMinute(minute - 2), 'not a hash', 'EX', 3600);
    await raw.hset(k.statsMinute(minute - 1), 'c', 'lots', 'f', '2', 'bogus', '1');
    await raw.expire(k.statsMinute(minute - 1), 3600);
    const one = await admin.metrics(bad.good, {});
    expect([one.skipped, one.total.completed, one.total.failed]).toEqual([3, 0, 2]);
    const all = await admin.metricsAll({});
    expect(all.skipped).toBeGreaterThanOrEqual(3);
    expect(all.total.failed).toBeGreaterThanOrEqual(2);
    expect(await codeOf(() => admin.metrics(bad.wrongType))).toBe('resolved');
    expect(warnings.filter((w) => w.includes(k.statsMinute(minute - 2)))).toHaveLength(1);
  });
});

describe('the reading CLI commands', () => {
  const cli = (...args: string[]) => runCli(['--url', testUrl(), ...args]);

  it('queues, topics and cache stats print the bad entries as rows (exit 0, one warning line)', async () => {
    const queues = await cli('queues', '--after', bad.prefix, '--limit', '1000');
    expect([queues.code, queues.stderr]).toEqual([0, expect.stringMatching(/^echomq: warning: \d+ of \d+ queues could not be read/)]);
    expect(queues.stdout).toContain('bad name!');
    expect(queues.stdout).toContain('invalid name: EMQ_BAD_NAME');
    expect(queues.stdout).toContain('unreadable: EMQ_WRONGTYPE');
    expect(queues.stdout).not.toContain('\x1b'); // the control character is shown escaped
    const json = JSON.parse((await cli('--json', 'queues', '--after', bad.prefix, '--limit', '1000')).stdout) as { items: { name: string; problem?: string }[]; unreadable: number };
    expect(json.items.find((i) => i.name === bad.badNames[1])).toMatchObject({ problem: 'invalid name' });
    expect(json.unreadable).toBeGreaterThanOrEqual(4);
    const topics = await cli('topics', '--after', bad.prefix, '--limit', '1000');
    expect(topics.code).toBe(0);
    expect(topics.stdout).toContain('bad topic!');
    expect(topics.stdout).toContain('unreadable: EMQ_WRONGTYPE');
    const stats = await cli('cache', 'stats', '--after', bad.prefix, '--limit', '1000');
    expect(stats.code).toBe(0);
    expect(stats.stdout).toContain('bad ns!');
  });

  it('stats skips the planted stats keys (another type, garbage fields) and counts them', async () => {
    for (const args of [['stats', bad.good], ['stats'], ['stats', bad.wrongType, '--range', '24h']]) {
      const r = await cli(...args);
      expect([args.join(' '), r.code, r.stderr]).toEqual([args.join(' '), 0, '']);
      expect(r.stdout).toContain('interval (UTC)');
    }
    const one = await cli('stats', bad.good);
    expect(one.stdout).toContain('3 unreadable stored entries skipped');
    expect(one.stdout).toMatch(/│ total\s+│ 0\s+│ 2\s+│ 0 /);
    const json = JSON.parse((await cli('--json', 'stats', bad.good)).stdout) as { skipped: number; total: { failed: number } };
    expect([json.skipped, json.total.failed]).toEqual([3, 2]);
  });

  it('jobs, job, groups, dead-letters and retention show bad data as such, never a stack', async () => {
    const jobs = await cli('jobs', bad.good, '--status', 'dead');
    expect(jobs.code).toBe(0);
    expect(jobs.stdout).toContain('unreadable: EMQ_WRONGTYPE');
    expect(jobs.stdout).toContain('not-a-job-id');
    const job = await cli('job', bad.good, bad.rowIsList);
    expect([job.code, job.stderr]).toEqual([0, '']);
    expect(job.stdout).toContain('unreadable');
    expect(JSON.parse((await cli('--json', 'job', bad.good, bad.rowIsList)).stdout)).toMatchObject({ id: bad.rowIsList, status: 'unreadable', unreadable: expect.stringMatching(/^EMQ_WRONGTYPE /) });
    const payload = await cli('job', bad.good, bad.badPayload);
    expect(payload.code).toBe(0);
    expect(payload.stdout).toContain('not json{');
    for (const args of [['groups', bad.topic], ['dead-letters', bad.topic], ['retention', bad.topic]]) expect([args[0], (await cli(...args)).code]).toEqual([args[0], 0]);
    // A single target that is itself unreadable is shown as such (exit 0, one warning line).
    for (const args of [['jobs', bad.wrongType, '--status', 'done'], ['dead-letters', bad.wrongTopic]]) {
      const r = await cli(...args);
      expect([args[0], r.code, r.stderr]).toEqual([args[0], 0, expect.stringMatching(/^echomq: warning: .* could not be read: EMQ_WRONGTYPE [^\n]*\n$/)]);
      expect(r.stdout).toContain('unreadable: EMQ_WRONGTYPE');
    }
    expect(JSON.parse((await cli('--json', 'jobs', bad.wrongType, '--status', 'done')).stdout)).toEqual({ unreadable: expect.stringMatching(/^EMQ_WRONGTYPE /) });
    // Bad input is still one line and exit 1, never a stack.
    const usage = await cli('queues', '--after', '');
    expect([usage.code, usage.stderr]).toEqual([1, expect.stringMatching(/^echomq: EMQ_BAD_NAME [^\n]*\n$/)]);
  });
});

/** Every page of the dashboard, over HTTP, with the bad data planted: each is served (200) and shows it. */
async function everyPage(origin: string, base: string, headers: Record<string, string>): Promise<void> {
  const get = async (path: string, extra: Record<string, string> = {}): Promise<{ status: number; body: string }> => {
    const r = await fetch(origin + base + path, { headers: { ...headers, ...extra }, redirect: 'manual' });
    return { status: r.status, body: await r.text() };
  };
  const overview = await get(`/?after=${encodeURIComponent(bad.prefix)}`);
  expect(overview.status).toBe(200);
  expect(overview.body).toContain('bad name!');
  expect(overview.body).toContain('invalid name: EMQ_BAD_NAME');
  expect(overview.body).toContain('unreadable: EMQ_WRONGTYPE');
  expect(overview.body).not.toContain('\x1b');
  expect((await get(`/?after=${encodeURIComponent(bad.prefix)}`, { 'x-echomq-live': '1' })).status).toBe(200);
  const next = await get(`/?after=${encodeURIComponent(bad.badNames[0])}`); // a page that starts after a bad entry
  expect(next.status).toBe(200);
  const dead = await get(`/queues/${bad.good}?status=dead`);
  expect(dead.status).toBe(200);
  expect(dead.body).toContain('3 unreadable stored entries skipped'); // the planted stats keys (the stored history)
  expect(dead.body).toContain('unreadable: EMQ_WRONGTYPE');
  expect(dead.body).toContain('not-a-job-id');
  for (const s of ['pending', 'scheduled', 'active', 'done', 'cancelled']) expect([s, (await get(`/queues/${bad.good}?status=${s}`)).status]).toEqual([s, 200]);
  const wrong = await get(`/queues/${bad.wrongType}?status=done`);
  expect(wrong.status).toBe(200);
  expect(wrong.body).toContain('unreadable: EMQ_WRONGTYPE');
  const rowIsList = await get(`/queues/${bad.good}/jobs/${bad.rowIsList}`);
  expect(rowIsList.status).toBe(200);
  expect(rowIsList.body).toContain('unreadable: EMQ_WRONGTYPE');
  const payload = await get(`/queues/${bad.good}/jobs/${bad.badPayload}`);
  expect(payload.status).toBe(200);
  expect(payload.body).toContain('not json{');
  expect((await get(`/queues/${bad.good}/search?id=${bad.rowIsList}`)).status).toBe(303);
  expect((await get(`/queues/${encodeURIComponent(bad.badNames[0])}`)).status).toBe(400);
  const busPage = await get(`/bus?after=${encodeURIComponent(bad.prefix)}`);
  expect(busPage.status).toBe(200);
  expect(busPage.body).toContain('bad topic!');
  expect(busPage.body).toMatch(/data-topic="[^"]*wrongtopic"[\s\S]*?unreadable: EMQ_WRONGTYPE/);
  const cachePage = await get(`/cache?after=${encodeURIComponent(bad.prefix)}`);
  expect(cachePage.status).toBe(200);
  expect(cachePage.body).toContain('bad ns!');
}

describe('the dashboard', () => {
  it('mounted in a Nest app: every page is served and shows the bad entries; the app keeps running', async () => {
    let d: DashboardTestApp | undefined;
    try {
      d = await startDashboardApp({ path: '/ops' });
      await everyPage(d.origin, '/ops', { 'x-let-in': 'yes' });
      expect((await fetch(`${d.origin}/ops/`, { headers: { 'x-let-in': 'yes' } })).status).toBe(200);
    } finally {
      await d?.app.close();
    }
  });

  it('standalone (`echomq dashboard`): every page is served and shows the bad entries; the process keeps running', async () => {
    const port = await freePort();
    const child = spawnScript(MAIN, ['--url', testUrl(), 'dashboard', '--port', String(port), '--no-token']);
    try {
      const [, printed] = await child.waitForLine(/^EchoMQ dashboard: (\S+)$/);
      const origin = new URL(printed).origin;
      await everyPage(origin, '', {});
      expect(child.hasExited()).toBe(false);
      expect((await fetch(`${origin}/`)).status).toBe(200);
    } finally {
      child.signal('SIGTERM');
      expect((await child.exited).code).toBe(0);
    }
  });
});

describe('the admin writes over bad data (last: they may change it)', () => {
  it('every write on a queue holding bad rows resolves or rejects typed; the queue stays readable', async () => {
    const q = bad.good;
    const outcomes: [string, string][] = [];
    const acts: [string, () => Promise<unknown>][] = [
      ['retry (row is a list)', () => admin.retry(q, bad.rowIsList)],
      ['promote (row is a list)', () => admin.promote(q, bad.rowIsList)],
      ['remove (row is a list)', () => admin.remove(q, bad.rowIsList)],
      ['retry (bad payload)', () => admin.retry(q, bad.badPayload)],
      ['retryDead', () => admin.retryDead(q)],
      ['purge dead', () => admin.purge(q, { status: 'dead', olderThanMs: 0 })],
      ['drain', () => admin.drain(q)],
      ['pause', () => admin.pause(q)],
      ['resume', () => admin.resume(q)],
      ['pause (wrong type)', () => admin.pause(bad.wrongType)],
      ['purge done (wrong type)', () => admin.purge(bad.wrongType, { status: 'done', olderThanMs: 0 })],
      ['replayDead (wrong type)', () => bus.replayDead(bad.wrongTopic)],
      ['invalidate (wrong type)', () => caches.invalidate(bad.wrongNs, 'k')],
    ];
    for (const [what, act] of acts) outcomes.push([what, await codeOf(act)]);
    for (const [what, code] of outcomes) expect([what, code]).toEqual([what, expect.stringMatching(/^(resolved|EMQ_[A-Z_]+)$/)]);
    expect((await admin.list({ after: bad.prefix, limit: 1000 })).items.find((i) => i.name === q)?.error).toBeUndefined();
  });
});
