/**
 * Issue 38, job search and filters: `QueueAdmin.findJobs` narrows one status's jobs by time range,
 * error text, payload field and payload text, examining at most `scan` index entries per call
 * (the continuation reaches every match); bad filters are refused with EMQ_BAD_OPTION before any
 * read; planted malformed entries are listed as unreadable, never thrown. And the CLI flags.
 */
import { EchoMqError, QueueAdmin, type JobSearchOptions, type JobSearchPage, type JobSummary } from '../../src/index.js';
import { queueKeys, wire } from '../../src/protocol.js';
import type { Json } from '../../src/core/codec.js';
import { runCli } from '../helpers/cli.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

const f = queueFixture();
const raw = rawClient();
let admin: QueueAdmin;
beforeAll(() => {
  admin = new QueueAdmin(f.conn, f.queues);
});
afterAll(async () => {
  await raw.quit();
});

/** Enqueues, claims and buries one job per [payload, error]: resolves to their ids in order. */
async function bury(q: string, jobs: [Json, string][]): Promise<string[]> {
  const ids: string[] = [];
  for (const [p] of jobs) ids.push(await f.queues.enqueue(q, p));
  const k = queueKeys(q);
  const { jobs: claimed } = await wire.claim(f.conn.scriptClient, k, jobs.length, 30_000);
  for (const j of claimed) {
    const error = jobs[ids.indexOf(j.id)][1];
    await wire.retry(f.conn.scriptClient, k, { id: j.id, token: j.token, error, fatal: true }, { maxAttempts: 1, backoff: 'f:50', deadCap: 1000 });
  }
  return ids;
}

/** Every match of a search, following `next` to the end; asserts the bound on each call. */
async function all(q: string, o: JobSearchOptions): Promise<{ jobs: JobSummary[]; pages: JobSearchPage[] }> {
  const pages: JobSearchPage[] = [];
  let cursor = o.cursor;
  do {
    const page = await admin.findJobs(q, { ...o, cursor });
    expect(page.examined).toBeLessThanOrEqual(o.scan ?? 2000);
    pages.push(page);
    cursor = page.next;
  } while (cursor !== undefined && pages.length < 100);
  return { jobs: pages.flatMap((p) => p.jobs), pages };
}

const codeOf = (act: () => Promise<unknown>): Promise<string> =>
  act().then(
    () => 'resolved',
    (e: unknown) => (e instanceof EchoMqError ? e.code : `untyped: ${String(e)}`),
  );

describe('findJobs', () => {
  const q = randomQueue('search');
  let early: string[];
  let late: string[];
  let between: number;
  const spec = (i: number): [Json, string] => [{ user: { id: i % 3 }, note: `n${i}`, tag: i % 3 === 1 ? '1' : 'x' }, i % 2 ? `Error: Timeout after ${i}s` : 'ValidationError: bad'];
  beforeAll(async () => {
    early = await bury(q, Array.from({ length: 10 }, (_, i) => spec(i)));
    await new Promise((r) => setTimeout(r, 30));
    between = Date.now();
    await new Promise((r) => setTimeout(r, 30));
    late = await bury(q, Array.from({ length: 20 }, (_, i) => spec(i + 10)));
  });
  const ids = (jobs: JobSummary[]): string[] => jobs.map((j) => j.id).sort();
  const pick = (pred: (i: number) => boolean): string[] => [...early, ...late].filter((_, i) => pred(i)).sort();

  it('error text narrows to the jobs whose last error contains it, case-insensitively', async () => {
    const page = await admin.findJobs(q, { status: 'dead', error: 'TIMEOUT' });
    expect(ids(page.jobs)).toEqual(pick((i) => i % 2 === 1));
    expect(page.jobs).toHaveLength(15);
    expect(page).toMatchObject({ examined: 30, examinedSoFar: 30, total: 30 });
    expect(page.next).toBeUndefined();
    // Newest first, as the plain listing.
    const plain = await admin.jobs(q, { status: 'dead', limit: 1000 });
    expect(page.jobs.map((j) => j.id)).toEqual(plain.jobs.filter((j) => /Timeout/.test(j.error ?? '')).map((j) => j.id));
  });

  it('a payload field equals a value: a number matches its JSON text, a string itself', async () => {
    expect(ids((await admin.findJobs(q, { status: 'dead', field: { path: 'user.id', equals: '1' } })).jobs)).toEqual(pick((i) => i % 3 === 1));
    expect(ids((await admin.findJobs(q, { status: 'dead', field: { path: 'tag', equals: '1' } })).jobs)).toEqual(pick((i) => i % 3 === 1));
    expect((await admin.findJobs(q, { status: 'dead', field: { path: 'user', equals: '[object Object]' } })).jobs).toEqual([]);
    expect((await admin.findJobs(q, { status: 'dead', field: { path: 'user.id.deeper', equals: '1' } })).jobs).toEqual([]);
  });

  it('payload text narrows to payloads containing it; filters combine (AND)', async () => {
    expect(ids((await admin.findJobs(q, { status: 'dead', payload: '"N7"' })).jobs)).toEqual(pick((i) => i === 7));
    expect(ids((await admin.findJobs(q, { status: 'dead', payload: 'n1' })).jobs)).toEqual(pick((i) => i === 1 || (i >= 10 && i < 20)));
    const both = await admin.findJobs(q, { status: 'dead', error: 'timeout', field: { path: 'user.id', equals: '0' } });
    expect(ids(both.jobs)).toEqual(pick((i) => i % 2 === 1 && i % 3 === 0));
  });

  it('a time range on the finished-at index (from / to inclusive) splits the two batches', async () => {
    const after = await admin.findJobs(q, { status: 'dead', from: new Date(between) });
    expect(ids(after.jobs)).toEqual([...late].sort());
    expect(after.total).toBe(20); // the index within the range (ZCOUNT), not the whole index
    expect(ids((await admin.findJobs(q, { status: 'dead', to: between })).jobs)).toEqual([...early].sort());
    expect((await admin.findJobs(q, { status: 'dead', from: between, to: between })).jobs).toEqual([]);
  });

  it('a time range on pending jobs uses the id mint time', async () => {
    const p = randomQueue('search-pend');
    const first = await Promise.all([1, 2, 3].map((n) => f.queues.enqueue(p, { n })));
    await new Promise((r) => setTimeout(r, 30));
    const t = Date.now();
    await new Promise((r) => setTimeout(r, 5));
    const second = await Promise.all([4, 5].map((n) => f.queues.enqueue(p, { n })));
    expect(ids((await admin.findJobs(p, { status: 'pending', from: t })).jobs)).toEqual([...second].sort());
    const before = await admin.findJobs(p, { status: 'pending', to: t });
    expect(ids(before.jobs)).toEqual([...first].sort());
    expect(before).toMatchObject({ examined: 5, total: 5 });
  });

  it('is bounded: each call examines at most `scan` entries, and following `next` reaches every match exactly once', async () => {
    const { jobs, pages } = await all(q, { status: 'dead', error: 'timeout', scan: 7 });
    expect(pages.length).toBe(5); // 30 entries, 7 per call
    expect(pages.map((p) => p.examined)).toEqual([7, 7, 7, 7, 2]);
    expect(pages[pages.length - 1].examinedSoFar).toBe(30);
    expect(jobs.map((j) => j.id).sort()).toEqual(pick((i) => i % 2 === 1));
    expect(new Set(jobs.map((j) => j.id)).size).toBe(jobs.length);
    // A limit stops a call early, after the entry that filled it; the next call goes on from there.
    const { jobs: limited, pages: lp } = await all(q, { status: 'dead', error: 'timeout', limit: 4 });
    expect(lp[0].jobs).toHaveLength(4);
    expect(lp[0].examined).toBeLessThan(30);
    expect(limited.map((j) => j.id)).toEqual(jobs.map((j) => j.id));
  });

  it('refuses bad filters with EMQ_BAD_OPTION (and a foreign cursor with EMQ_BAD_CURSOR) before any read', async () => {
    const bad: unknown[] = [
      { status: 'nope' },
      { status: 'dead', from: 'yesterday' },
      { status: 'dead', from: Number.NaN },
      { status: 'dead', to: new Date('garbage') },
      { status: 'dead', from: 2000, to: 1000 },
      { status: 'dead', error: '' },
      { status: 'dead', error: 'x'.repeat(201) },
      { status: 'dead', error: '/time.*out/i' },
      { status: 'dead', error: 'time.*out' },
      { status: 'dead', payload: '\\d+' },
      { status: 'dead', error: 'a\u001bb' },
      { status: 'dead', field: { path: '', equals: '1' } },
      { status: 'dead', field: { path: 'a..b', equals: '1' } },
      { status: 'dead', field: { path: 'a.b.c.d.e.f.g.h.i', equals: '1' } },
      { status: 'dead', field: { path: 'user.id' } },
      { status: 'dead', field: { path: 'user.id', equals: '1', op: 'gt' } },
      { status: 'dead', scan: 0 },
      { status: 'dead', scan: 5001 },
      { status: 'dead', limit: 1.5 },
      { status: 'dead', eror: 'typo' },
    ];
    for (const o of bad) expect([o, await codeOf(() => admin.findJobs(q, o as JobSearchOptions))]).toEqual([o, 'EMQ_BAD_OPTION']);
    expect(await codeOf(() => admin.findJobs(q, { status: 'dead', cursor: 'garbage' as never }))).toBe('EMQ_BAD_CURSOR');
    const other = (await admin.findJobs(q, { status: 'dead', scan: 1 })).next;
    expect(await codeOf(() => admin.findJobs(q, { status: 'done', cursor: other }))).toBe('EMQ_BAD_CURSOR');
    expect(await codeOf(() => admin.findJobs(randomQueue('nobody'), { status: 'dead' }))).toBe('EMQ_NOT_FOUND');
  });

  it('lists planted malformed entries as unreadable (never thrown), and still filters the rest', async () => {
    const p = randomQueue('search-bad');
    const [good] = await bury(p, [[{ n: 1 }, 'Timeout']]);
    const k = queueKeys(p);
    const wrong = 'job' + 'B'.repeat(11); // a job id whose row is a list
    await raw.zadd(k.dead, Date.now() + 1, 'not a job id', Date.now() + 2, wrong);
    await raw.rpush(k.jobPrefix + wrong, 'x');
    await raw.hset(k.data, wrong, '{not json');
    try {
      const page = await admin.findJobs(p, { status: 'dead', error: 'timeout', field: { path: 'n', equals: '1' } });
      const by = new Map(page.jobs.map((j) => [j.id, j]));
      expect(by.get(good)?.unreadable).toBeUndefined();
      expect(by.get('not a job id')?.unreadable).toMatch(/^EMQ_BAD_ID /);
      expect(by.get(wrong)?.unreadable).toMatch(/^EMQ_WRONGTYPE /);
      expect(page).toMatchObject({ examined: 3, total: 3 });
      // A page that stops on a planted member still continues past it.
      const { jobs } = await all(p, { status: 'dead', scan: 1 });
      expect(jobs.map((j) => j.id).sort()).toEqual([good, 'not a job id', wrong].sort());
    } finally {
      await raw.del(k.jobPrefix + wrong);
    }
  });
});

describe('echomq jobs with filter flags', () => {
  it('--error, --where, --payload, --since and --scan narrow the listing; bad flags exit 1 with a message', async () => {
    const q = randomQueue('search-cli');
    const t0 = new Date(Date.now() - 1000).toISOString();
    const ids = await bury(q, [
      [{ user: { id: 42 } }, 'Error: timeout\u001b[31m red'],
      [{ user: { id: 7 } }, 'Error: timeout'],
      [{ user: { id: 42 } }, 'ValidationError'],
    ]);
    const cli = (...args: string[]) => runCli(['--url', testUrl(), ...args]);
    const json = await cli('--json', 'jobs', q, '--status', 'dead', '--error', 'TIMEOUT', '--where', 'user.id=42', '--since', t0, '--scan', '100');
    expect([json.code, json.stderr]).toEqual([0, '']);
    const page = JSON.parse(json.stdout) as JobSearchPage;
    expect(page.jobs.map((j) => j.id)).toEqual([ids[0]]);
    expect(page).toMatchObject({ examined: 3, total: 3 });
    expect(JSON.parse((await cli('--json', 'jobs', q, '--status', 'dead', '--payload', '"id":7')).stdout).jobs.map((j: JobSummary) => j.id)).toEqual([ids[1]]);
    expect(JSON.parse((await cli('--json', 'jobs', q, '--status', 'dead', '--until', '1h')).stdout).jobs).toEqual([]);
    // The table escapes the control character of the error, and says how much it examined.
    const table = await cli('jobs', q, '--status', 'dead', '--error', 'timeout');
    expect(table.code).toBe(0);
    expect(table.stdout).not.toContain('\u001b');
    expect(table.stdout).toContain('\\x1b[31m');
    expect(table.stdout).toMatch(/examined 3 \(3 so far\) of 3; 2 matched/);
    const first = await cli('jobs', q, '--status', 'dead', '--error', 'timeout', '--scan', '2');
    expect(first.stdout).toMatch(/examined 2 \(2 so far\) of 3; 1 matched/);
    const next = /--cursor (\S+)/.exec(first.stdout)?.[1];
    expect(next).toBeDefined();
    const rest = await cli('--json', 'jobs', q, '--status', 'dead', '--error', 'timeout', '--scan', '2', '--cursor', next as string);
    expect(JSON.parse(rest.stdout)).toMatchObject({ examined: 1, examinedSoFar: 3, jobs: [{ id: ids[0] }] });
    for (const args of [['--since', 'yesterday'], ['--where', 'user.id'], ['--error', '/time.*out/'], ['--where', '=1'], ['--scan', '0']]) {
      const r = await cli('jobs', q, '--status', 'dead', ...args);
      expect([args.join(' '), r.code, r.stdout]).toEqual([args.join(' '), 1, '']);
      expect(r.stderr).toMatch(/^echomq: /);
    }
  });
});
