import { QueueAdmin, type JobCursor } from '../../src/index.js';
import { globalKeys } from '../../src/protocol.js';
import { runCli } from '../helpers/cli.js';
import { csrfOf, startDashboardApp, type DashboardTestApp } from '../helpers/dashboard.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

// Issue 38, "flows are invisible": their queues are announced, waiting parents are listed, and a
// parent's page (dashboard and CLI) shows its children; a child's links its parent.
const f = queueFixture();
const IN = { 'x-let-in': 'yes' };
let d: DashboardTestApp;
let admin: QueueAdmin;
beforeAll(async () => {
  d = await startDashboardApp({ path: '/ops' });
  admin = new QueueAdmin(f.conn, f.queues);
});
afterAll(async () => {
  await f.queues?.flows.close();
  await d?.app.close();
});
const known = async (q: string): Promise<boolean> => (await f.raw.zscore(globalKeys.queues, q)) !== null;
const get = (path: string): Promise<Response> => fetch(d.origin + path, { headers: IN, redirect: 'manual' });

describe('a flow announces its queues', () => {
  it('flow() announces the root queue and every child queue, after the write', async () => {
    const [root, a, b] = [randomQueue('ann-root'), randomQueue('ann-a'), randomQueue('ann-b')];
    await f.queues.flow({ queue: root, payload: {}, children: [{ queue: a, payload: 1 }, { queue: b, payload: 2, children: [{ queue: a, payload: 3 }] }] });
    await eventually(async () => (await known(root)) && (await known(a)) && (await known(b)), 5000, 'the three queues announced');
  });

  it('flowMany() announces every queue of every flow; a refused flow announces nothing', async () => {
    const [r1, r2, c] = [randomQueue('annm-1'), randomQueue('annm-2'), randomQueue('annm-c')];
    await f.queues.flowMany([
      { queue: r1, payload: {}, children: [{ queue: c, payload: 1 }] },
      { queue: r2, payload: {} },
    ]);
    await eventually(async () => (await known(r1)) && (await known(r2)) && (await known(c)), 5000, 'the three queues announced');
    const [bad, badChild] = [randomQueue('annm-bad'), randomQueue('annm-badc')];
    await expect(f.queues.flow({ queue: bad, payload: {}, children: [{ queue: badChild, payload: 1, key: 'k' }, { queue: badChild, payload: 2, key: 'k' }] })).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 200));
    expect(await known(bad)).toBe(false);
    expect(await known(badChild)).toBe(false);
  });
});

describe('waiting parents are listed', () => {
  it('jobs(q, { status: waiting }) pages through every waiting parent once, and not the other jobs', async () => {
    const [q, kids] = [randomQueue('wl'), randomQueue('wl-kids')];
    const parents = await f.queues.flowMany(Array.from({ length: 5 }, (_, i) => ({ queue: q, payload: { i }, children: [{ queue: kids, payload: i }] })));
    await f.queues.enqueue(q, { plain: true });
    const seen: string[] = [];
    let cursor: JobCursor | undefined;
    let pages = 0;
    do {
      const page = await admin.jobs(q, { status: 'waiting', limit: 2, cursor });
      expect(page.jobs.length).toBeLessThanOrEqual(2);
      for (const j of page.jobs) expect(j).toMatchObject({ status: 'waiting', attempts: 0 });
      seen.push(...page.jobs.map((j) => j.id));
      cursor = page.next;
    } while (cursor && ++pages < 20);
    expect(seen.sort()).toEqual(parents.map((p) => p.id).sort());
    expect((await admin.jobs(kids, { status: 'waiting' })).jobs).toEqual([]);
    await expect(admin.jobs(q, { status: 'waiting', cursor: 'nope' as JobCursor })).rejects.toMatchObject({ code: 'EMQ_BAD_CURSOR' });
  });

  it('the CLI lists them (`echomq jobs <q> --status waiting`), and `echomq job` shows a parent\'s children and a child\'s parent', async () => {
    const [q, kids] = [randomQueue('wcli'), randomQueue('wcli-kids')];
    const flow = await f.queues.flow({ queue: q, payload: {}, children: [{ queue: kids, payload: 1, key: 'first' }, { queue: kids, payload: 2, key: 'second' }] });
    await eventually(async () => (await known(q)) && (await known(kids)), 5000, 'announced');
    const jobs = await runCli(['--url', testUrl(), '--json', 'jobs', q, '--status', 'waiting']);
    expect(jobs.code).toBe(0);
    expect((JSON.parse(jobs.stdout) as { jobs: { id: string }[] }).jobs.map((j) => j.id)).toEqual([flow.id]);
    const parent = await runCli(['--url', testUrl(), 'job', q, flow.id]);
    expect(parent.code).toBe(0);
    expect(parent.stdout).toMatch(/children\W+2, 2 not finished/);
    expect(parent.stdout).toContain(`${flow.children[0].id} ${kids} pending`);
    expect(parent.stdout).toMatch(/child second/);
    const child = await runCli(['--url', testUrl(), 'job', kids, flow.children[1].id]);
    expect(child.stdout).toContain(`${flow.id} (queue ${q})`);
  }, 180_000);
});

describe("the dashboard shows a parent's children", () => {
  it('a waiting tab, a parent page with its children and no Remove, a child page linking its parent', async () => {
    const [q, kids] = [randomQueue('wdash'), randomQueue('wdash-kids')];
    const flow = await f.queues.flow({ queue: q, payload: {}, children: [{ queue: kids, payload: 1, key: 'k1' }] });
    const list = await (await get(`/ops/queues/${q}?status=waiting`)).text();
    expect(list).toContain(`data-job="${flow.id}"`);
    expect(list).toMatch(/data-state="waiting">waiting<\/span> <span data-count="waiting">1<\/span>/);
    const page = await (await get(`/ops/queues/${q}/jobs/${flow.id}`)).text();
    expect(page).toContain('id="children"');
    expect(page).toContain(`href="/ops/queues/${kids}/jobs/${flow.children[0].id}"`);
    expect(page).toMatch(/<td>k1<\/td>/);
    expect(page).toContain('Cancel…');
    expect(page).not.toContain('Remove…');
    const child = await (await get(`/ops/queues/${kids}/jobs/${flow.children[0].id}`)).text();
    expect(child).toContain(`href="/ops/queues/${q}/jobs/${flow.id}"`);
    expect(child).not.toContain('Remove…'); // an unfinished flow child: remove.lua refuses it
    expect(csrfOf(child)).toBeTruthy();
  });
});
