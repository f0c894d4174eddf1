/**
 * Issue 38: paused lanes (issue 37's `pauseLane`) shown in the operator plane — the admin's queue
 * info (`pausedLanes`), `echomq queues`, `echomq pause-lane/resume-lane`, and the dashboard's
 * queue page (a `paused` badge per lane, a Resume-lane button, a Pause-lane form; none of them
 * when read-only).
 */
import { QueueAdmin } from '../../src/admin/queue-admin.js';
import { DashboardApp, type DashboardRequest } from '../../src/dashboard/dashboard-app.js';
import { runCli } from '../helpers/cli.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue, testUrl } from '../helpers/valkey.js';

const f = queueFixture();
const get = (path: string): DashboardRequest => ({ method: 'GET', path, query: new URLSearchParams(), form: {}, headers: {}, base: '/d' });

describe('paused lanes in the operator plane', () => {
  it('are in the queue info and the CLI table, paused and resumed by the CLI', async () => {
    const q = randomQueue('lanes');
    await f.queues.enqueue(q, { n: 1 }, { lane: 'tenant-a' });
    const admin = new QueueAdmin(f.conn, f.queues);
    expect((await admin.info(q)).pausedLanes).toEqual([]);
    expect(await admin.pauseLane(q, 'tenant-a')).toBe(true);
    expect(await admin.pauseLane(q, 'tenant-b')).toBe(true);
    expect(await admin.pauseLane(q, 'tenant-a')).toBe(false);
    expect((await admin.info(q)).pausedLanes).toEqual(['tenant-a', 'tenant-b']);
    expect((await admin.list({ after: q.slice(0, -1), limit: 1 })).items[0]).toMatchObject({ name: q, pausedLanes: ['tenant-a', 'tenant-b'] });

    const table = await runCli(['--url', testUrl(), 'queues', '--after', q.slice(0, -1), '--limit', '1']);
    expect([table.code, table.stderr]).toEqual([0, '']);
    expect(table.stdout).toContain('paused lanes');
    expect(table.stdout.split('\n').find((l) => l.includes(q))).toContain('tenant-a tenant-b');

    const resume = await runCli(['--url', testUrl(), 'resume-lane', q, 'tenant-b']);
    expect([resume.code, resume.stdout]).toEqual([0, `lane tenant-b of ${q} resumed\n`]);
    const again = await runCli(['--url', testUrl(), '--json', 'resume-lane', q, 'tenant-b']);
    expect(JSON.parse(again.stdout)).toEqual({ ok: true, changed: false });
    const pause = await runCli(['--url', testUrl(), 'pause-lane', q, 'tenant-c']);
    expect(pause.code).toBe(0);
    expect((await admin.info(q)).pausedLanes).toEqual(['tenant-a', 'tenant-c']);
    // A bad lane name is bad input (exit 1) and writes nothing; an unknown queue is exit 2.
    const bad = await runCli(['--url', testUrl(), 'pause-lane', q, 'no spaces']);
    expect(bad.code).toBe(1);
    expect((await admin.info(q)).pausedLanes).toEqual(['tenant-a', 'tenant-c']);
    expect((await runCli(['--url', testUrl(), 'pause-lane', randomQueue('nobody'), 'x'])).code).toBe(2);
  });

  it('are shown on the queue page with a paused badge and Resume-lane buttons, paused and resumed by POST', async () => {
    const q = randomQueue('lanes-page');
    await f.queues.enqueue(q, { n: 1 }, { lane: 'tenant-a' });
    const admin = new QueueAdmin(f.conn, f.queues);
    await admin.pauseLane(q, 'tenant-a');
    const app = new DashboardApp({ queues: admin }, { readOnly: false, refreshMs: 0 });
    const page = await app.handle(get(`/queues/${q}`));
    expect(page.status).toBe(200);
    const li = /<li data-lane="tenant-a">[\s\S]*?<\/li>/.exec(page.body)?.[0];
    expect(li).toContain('<span class="st st-paused" data-state="paused">paused</span>');
    expect(li).toContain(`action="/d/queues/${q}/lanes/tenant-a/resume"`);
    expect(li).toContain(`name="_csrf" value="${app.csrf}"`);
    expect(page.body).toContain(`action="/d/queues/${q}/lanes/pause"`);

    const post = (path: string, form: Record<string, unknown>) => app.handle({ method: 'POST', path, query: new URLSearchParams(), form: { _csrf: app.csrf, ...form }, headers: { 'sec-fetch-site': 'same-origin' }, base: '/d' });
    const resumed = await post(`/queues/${q}/lanes/tenant-a/resume`, {});
    expect([resumed.status, resumed.headers.Location]).toEqual([303, `/d/queues/${q}?notice=lane-resumed`]);
    expect((await admin.info(q)).pausedLanes).toEqual([]);
    const paused = await post(`/queues/${q}/lanes/pause`, { lane: 'tenant-b' });
    expect([paused.status, paused.headers.Location]).toEqual([303, `/d/queues/${q}?notice=lane-paused`]);
    expect((await admin.info(q)).pausedLanes).toEqual(['tenant-b']);
    // A bad lane name is a 400 page, writing nothing; a POST without the token is refused.
    expect((await post(`/queues/${q}/lanes/pause`, { lane: '<b>x</b>' })).status).toBe(400);
    const noToken = await app.handle({ method: 'POST', path: `/queues/${q}/lanes/tenant-b/resume`, query: new URLSearchParams(), form: {}, headers: {}, base: '/d' });
    expect(noToken.status).toBe(403);
    expect((await admin.info(q)).pausedLanes).toEqual(['tenant-b']);
    const notice = await app.handle({ ...get(`/queues/${q}`), query: new URLSearchParams('notice=lane-paused') });
    expect(notice.body).toContain('Lane paused');

    // Read-only: the lanes and badges, no button, no form; a POST is refused.
    const ro = new DashboardApp({ queues: admin }, { readOnly: true, refreshMs: 0 });
    const roPage = await ro.handle(get(`/queues/${q}`));
    expect(roPage.body).toContain('<li data-lane="tenant-b">');
    expect(roPage.body).not.toContain('/lanes/');
    expect((await ro.handle({ method: 'POST', path: `/queues/${q}/lanes/tenant-b/resume`, query: new URLSearchParams(), form: { _csrf: ro.csrf }, headers: {}, base: '/d' })).status).toBe(403);
  });
});
