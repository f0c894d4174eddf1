/**
 * Issue 38 #4: read-only monitoring. The reading CLI commands and every dashboard page need read
 * permissions only — no node lease, no write — so a monitoring user with the grant
 * docs/deployment.md gives (`+@read` and a few exact commands, every key read-only) runs
 * `echomq queues`, `jobs`, `job`, `topics`, `groups`, `dead-letters`, `retention`,
 * `cache stats` and the standalone dashboard; a write is refused with EMQ_NOPERM and writes
 * nothing. And a refused call leaves the registry alone: an enqueue or publish refused with
 * EMQ_NOPERM does not add its name to `{emq}:queues` / `{emq}:topics`.
 */
import type { Redis } from 'iovalkey';
import { BusService, CacheService, EchoMqError, QueueService } from '../../src/index.js';
import { EchoMqConnection, globalKeys } from '../../src/protocol.js';
import { queueKeys } from '../../src/core/keys.js';
import { runScript } from '../../src/core/scripts.js';
import { freePort } from '../../src/testing.js';
import { aclUser, type TestUser } from '../helpers/acl.js';
import { spawnScript } from '../helpers/child.js';
import { MAIN, runCli } from '../helpers/cli.js';
import { buryJobs } from '../helpers/dashboard.js';
import { deadLetters } from '../helpers/dead-letters.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

/** The monitoring grant of docs/deployment.md ("A monitoring user"), word for word. */
export const MONITOR = ['resetkeys', 'resetchannels', '-@all', '+@read', '-@dangerous', '+info', '+time', '+evalsha', '+eval', '+client|setname', '~{emq}:*', '~emq:*'];
/** The stricter variant (docs/deployment.md): read-only key patterns, no scripting; only job details are refused. */
const MONITOR_NO_SCRIPTS = ['resetkeys', 'resetchannels', '-@all', '+@read', '-@dangerous', '+info', '+time', '%R~{emq}:*', '%R~emq:*'];
/** The base grant of docs/operations.md §3, for one queue. */
const BASE = ['~{emq}:*', '-@all', '+@read', '+@write', '+@blocking', '+@pubsub', '-@dangerous', '-function', '+evalsha', '+eval', '+info', '+time', '+auth', '+hello', '+ping', '+quit', '+select', '+client|setname', '+client|id', '+client|unblock'];

const f = queueFixture();
const raw: Redis = rawClient();
const users: TestUser[] = [];
afterAll(async () => {
  for (const u of users) await u.drop();
  await raw.quit();
});
const user = async (rules: string[]): Promise<TestUser> => {
  const u = await aclUser(raw, rules, 'emq-ro');
  users.push(u);
  return u;
};
const urlOf = (u: TestUser): string => {
  const url = new URL(testUrl());
  url.username = u.username;
  url.password = u.password;
  return url.toString();
};

describe('a monitoring user (read permissions only)', () => {
  it('runs every reading CLI command and serves every dashboard page; writes are refused and write nothing; no node lease', async () => {
    const q = randomQueue('ro');
    const [dead] = await buryJobs(f.conn, f.queues, q, [{ n: 1 }]);
    await f.queues.enqueue(q, { n: 2 });
    const topic = randomQueue('ro-topic');
    const bus = new BusService(f.conn, { trimIntervalMs: 0 });
    await bus.publish(topic, { n: 1 });
    await bus.close();
    await raw.xgroup('CREATE', `emq:{${topic}}:bus:log`, 'g1', '0');
    const ns = randomQueue('ro-ns');
    const cache = new CacheService(f.conn, { namespace: ns });
    await cache.set('k', { v: 1 });
    await cache.invalidate('k');
    await cache.close();
    const u = await user(MONITOR);
    const url = urlOf(u);
    const seq = await raw.get(globalKeys.nodeSeq);
    const cli = (...args: string[]) => runCli(['--url', url, ...args]);

    // --limit 1: the registry is shared with every other test of the run; read only this test's entry.
    const queues = await cli('queues', '--after', q.slice(0, -1), '--limit', '1');
    expect([queues.code, queues.stderr]).toEqual([0, '']);
    expect(queues.stdout).toContain(q);
    const jobs = await cli('--json', 'jobs', q, '--status', 'dead');
    expect([jobs.code, jobs.stderr]).toEqual([0, '']);
    expect(JSON.parse(jobs.stdout)).toMatchObject({ jobs: [{ id: dead, status: 'dead' }] });
    const job = await cli('--json', 'job', q, dead);
    expect([job.code, job.stderr]).toEqual([0, '']);
    expect(JSON.parse(job.stdout)).toMatchObject({ id: dead, status: 'dead', payload: { n: 1 } });
    for (const args of [['topics', '--after', topic.slice(0, -1), '--limit', '1'], ['groups', topic], ['dead-letters', topic], ['retention', topic], ['cache', 'stats', '--after', ns.slice(0, -1), '--limit', '1'], ['jobs', q, '--status', 'pending'], ['stats'], ['stats', q, '--range', '24h']]) {
      const r = await cli(...args);
      expect([args.join(' '), r.code, r.stderr]).toEqual([args.join(' '), 0, '']);
    }
    // The processes view reads with HGETALL and TIME only; this test's own process is listed, live.
    const procs = await cli('--json', 'processes');
    expect([procs.code, /NOPERM/.test(procs.stderr)]).toEqual([0, false]);
    expect((JSON.parse(procs.stdout) as { items: { state: string; info?: { pid: number } }[] }).items.some((p) => p.state === 'live' && p.info?.pid === process.pid)).toBe(true);
    // The stored history (stats.lua, written here as a consumer would) reads with read permissions.
    await runScript(f.conn.scriptClient, 'stats', [queueKeys(q).meta], ['2', Math.floor(Date.now() / 1000), 'c', 5, 'r6', 5, 'rs', 400]);
    const history = await cli('--json', 'stats', q);
    expect([history.code, history.stderr]).toEqual([0, '']);
    expect(JSON.parse(history.stdout)).toMatchObject({ queue: q, total: { completed: 5, run: { count: 5, meanMs: 80 } } });
    // A write is refused (exit 3, EMQ_NOPERM) and writes nothing.
    const pause = await cli('pause', q);
    expect(pause.code).toBe(3);
    expect(pause.stderr).toMatch(/^echomq: EMQ_NOPERM /);
    expect(await raw.hget(`emq:{${q}}:meta`, 'paused')).toBeNull();
    const lane = await cli('pause-lane', q, 'tenant-a');
    expect([lane.code, lane.stderr]).toEqual([3, expect.stringMatching(/^echomq: EMQ_NOPERM /)]);
    expect(await raw.hget(`emq:{${q}}:meta`, 'gpaused')).toBeNull();

    const port = await freePort();
    const token = 'monitor-' + 'x'.repeat(20);
    const auth = { authorization: `Bearer ${token}` };
    const child = spawnScript(MAIN, ['--url', url, 'dashboard', '--port', String(port), '--token', token, '--read-only']);
    try {
      const [, printed] = await child.waitForLine(/^EchoMQ dashboard: (\S+)$/);
      const origin = new URL(printed).origin;
      const pages = [`/?after=${q.slice(0, -1)}`, `/queues/${q}`, `/queues/${q}?status=dead`, `/queues/${q}/jobs/${dead}`, `/bus?after=${topic.slice(0, -1)}`, `/cache?after=${ns.slice(0, -1)}`];
      for (const p of pages) {
        const r = await fetch(origin + p, { headers: auth, redirect: 'manual' });
        const body = await r.text();
        expect([p, r.status]).toEqual([p, 200]);
        // A listing page shows the shared registry, where other tests plant unreadable entries
        // on purpose: this test's own row (from its name to the end of its table row) must read.
        const mine = p.includes('?after=') ? [q, topic, ns].find((n) => body.includes(`>${n}<`)) : undefined;
        const scope = mine === undefined ? body : body.slice(body.indexOf(`>${mine}<`), body.indexOf('</tr>', body.indexOf(`>${mine}<`)));
        expect([p, scope.includes('unreadable')]).toEqual([p, false]);
      }
      expect((await fetch(`${origin}/queues/${q}/search?id=${dead}`, { headers: auth, redirect: 'manual' })).status).toBe(303);
      const processes = await fetch(`${origin}/processes`, { headers: auth });
      expect([processes.status, (await processes.text()).includes(`data-state="live" data-pid="${process.pid}"`)]).toEqual([200, true]);
      await new Promise((r) => setTimeout(r, 1500)); // the sampler ticks as this user too
      expect(child.hasExited()).toBe(false);
    } finally {
      child.signal('SIGTERM');
      expect((await child.exited).code).toBe(0);
    }
    expect(child.stderr()).toBe('');
    expect(await raw.get(globalKeys.nodeSeq)).toBe(seq); // no node number was leased (a lease INCRs the sequence)
  });

  it('searches jobs and reads dead letters with read permissions only (CLI filters, the filtered queue page, the dead-letter page)', async () => {
    const q = randomQueue('ro-search');
    const [dead] = await buryJobs(f.conn, f.queues, q, [{ n: 1 }, { n: 2 }]);
    const topic = randomQueue('ro-dead');
    const [deadId] = await deadLetters(f.conn, raw, topic, [{ n: 1 }]);
    const url = urlOf(await user(MONITOR));
    const found = await runCli(['--url', url, '--json', 'jobs', q, '--status', 'dead', '--error', 'BOOM', '--where', 'n=1', '--since', '1h']);
    expect([found.code, found.stderr]).toEqual([0, '']);
    expect(JSON.parse(found.stdout)).toMatchObject({ jobs: [{ id: dead }], examined: 2 });
    const port = await freePort();
    const token = 'monitor-' + 'y'.repeat(20);
    const auth = { authorization: `Bearer ${token}` };
    const child = spawnScript(MAIN, ['--url', url, 'dashboard', '--port', String(port), '--token', token, '--read-only']);
    try {
      const [, printed] = await child.waitForLine(/^EchoMQ dashboard: (\S+)$/);
      const origin = new URL(printed).origin;
      const search = await fetch(`${origin}/queues/${q}?status=dead&error=boom&field=n&equals=1`, { headers: auth });
      const body = await search.text();
      expect(search.status).toBe(200);
      expect([...body.matchAll(/<tr data-job="([^"]+)"/g)].map((m) => m[1])).toEqual([dead]);
      const list = await fetch(`${origin}/bus/${topic}/dead-letters`, { headers: auth });
      const page = await list.text();
      expect(list.status).toBe(200);
      expect(page).toContain(`data-dead="${deadId}"`);
      expect(page).not.toContain('method="post"');
      expect((await fetch(`${origin}/bus/${topic}/dead-letters/${deadId}`, { headers: auth })).status).toBe(200);
    } finally {
      child.signal('SIGTERM');
      expect((await child.exited).code).toBe(0);
    }
  });

  it('searches jobs and reads dead letters with read permissions only (CLI filters, the filtered queue page, the dead-letter page)', async () => {
    const q = randomQueue('ro-search');
    const [dead] = await buryJobs(f.conn, f.queues, q, [{ n: 1 }, { n: 2 }]);
    const topic = randomQueue('ro-dead');
    const [deadId] = await deadLetters(f.conn, raw, topic, [{ n: 1 }]);
    const url = urlOf(await user(MONITOR));
    const found = await runCli(['--url', url, '--json', 'jobs', q, '--status', 'dead', '--error', 'BOOM', '--where', 'n=1', '--since', '1h']);
    expect([found.code, found.stderr]).toEqual([0, '']);
    expect(JSON.parse(found.stdout)).toMatchObject({ jobs: [{ id: dead }], examined: 2 });
    const port = await freePort();
    const token = 'monitor-' + 'y'.repeat(20);
    const auth = { authorization: `Bearer ${token}` };
    const child = spawnScript(MAIN, ['--url', url, 'dashboard', '--port', String(port), '--token', token, '--read-only']);
    try {
      const [, printed] = await child.waitForLine(/^EchoMQ dashboard: (\S+)$/);
      const origin = new URL(printed).origin;
      const search = await fetch(`${origin}/queues/${q}?status=dead&error=boom&field=n&equals=1`, { headers: auth });
      const body = await search.text();
      expect(search.status).toBe(200);
      expect([...body.matchAll(/<tr data-job="([^"]+)"/g)].map((m) => m[1])).toEqual([dead]);
      const list = await fetch(`${origin}/bus/${topic}/dead-letters`, { headers: auth });
      const page = await list.text();
      expect(list.status).toBe(200);
      expect(page).toContain(`data-dead="${deadId}"`);
      expect(page).not.toContain('method="post"');
      expect((await fetch(`${origin}/bus/${topic}/dead-letters/${deadId}`, { headers: auth })).status).toBe(200);
    } finally {
      child.signal('SIGTERM');
      expect((await child.exited).code).toBe(0);
    }
  });

  it('the stricter grant (read-only keys, no scripting) runs every reading command but job, refused with EMQ_NOPERM', async () => {
    const q = randomQueue('ro-strict');
    const [dead] = await buryJobs(f.conn, f.queues, q, [{ n: 1 }]);
    const url = urlOf(await user(MONITOR_NO_SCRIPTS));
    const cli = (...args: string[]) => runCli(['--url', url, ...args]);
    for (const args of [['queues', '--after', q.slice(0, -1), '--limit', '1'], ['jobs', q, '--status', 'dead']]) {
      const r = await cli(...args);
      expect([args.join(' '), r.code, r.stderr]).toEqual([args.join(' '), 0, '']);
    }
    // Whole registries are shared with the other tests of the run (some plant bad entries on
    // purpose, shown as warnings): what matters here is that no read is refused.
    for (const args of [['topics'], ['cache', 'stats'], ['processes']]) {
      const r = await cli(...args);
      expect([args.join(' '), r.code, /NOPERM/.test(r.stderr)]).toEqual([args.join(' '), 0, false]);
    }
    const job = await cli('job', q, dead);
    expect(job.code).toBe(3);
    expect(job.stderr).toMatch(/^echomq: EMQ_NOPERM /);
  });

  it('a full user still leases lazily for a command that mints an id (cache invalidate)', async () => {
    const ns = randomQueue('lazy-ns');
    const cache = new CacheService(f.conn, { namespace: ns });
    await cache.set('k', { v: 1 });
    await cache.close();
    const seq = Number(await raw.get(globalKeys.nodeSeq));
    expect(await runCli(['--url', testUrl(), 'cache', 'invalidate', ns, 'k'])).toMatchObject({ code: 0 });
    expect(Number(await raw.get(globalKeys.nodeSeq))).toBeGreaterThan(seq);
  });
});

describe('a refused call leaves the registry alone', () => {
  it('an enqueue or a publish refused with EMQ_NOPERM adds no name to the registry', async () => {
    const mine = randomQueue('granted');
    const u = await user([...BASE, `~emq:{${mine}}:*`, `&emq:{${mine}}:*`]);
    const conn = new EchoMqConnection({ url: testUrl(), username: u.username, password: u.password });
    await conn.open();
    const queues = new QueueService(conn);
    const bus = new BusService(conn, { trimIntervalMs: 0 });
    try {
      const other = randomQueue('refused');
      const otherTopic = randomQueue('refused-topic');
      const code = (e: unknown) => (e instanceof EchoMqError ? e.code : String(e));
      expect(await queues.enqueue(other, { n: 1 }).catch(code)).toBe('EMQ_NOPERM');
      expect(await bus.publish(otherTopic, { n: 1 }).catch(code)).toBe('EMQ_NOPERM');
      await queues.enqueue(mine, { n: 1 });
      await new Promise((r) => setTimeout(r, 300)); // the background announcements have run
      expect(await raw.zscore(globalKeys.queues, other)).toBeNull();
      expect(await raw.zscore(globalKeys.topics, otherTopic)).toBeNull();
      expect(await raw.zscore(globalKeys.queues, mine)).toBe('0');
    } finally {
      await bus.close();
      await conn.close();
    }
  });
});
