import { queueKeys, wire } from '../../src/protocol.js';
import { buryJobs, csrfOf, startDashboardApp, type DashboardTestApp } from '../helpers/dashboard.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue } from '../helpers/valkey.js';

// Issue 38, items 3 and 4: destructive buttons show what they touch and ask on a confirmation
// page first; a Cancel button on a job that has not finished (cooperative for an active one).
const f = queueFixture();
const IN = { 'x-let-in': 'yes' };
let d: DashboardTestApp;
beforeAll(async () => {
  d = await startDashboardApp({ path: '/ops' });
});
afterAll(async () => {
  await d?.app.close();
});

const get = (path: string): Promise<Response> => fetch(d.origin + path, { headers: IN, redirect: 'manual' });
const post = (path: string, form: Record<string, string>): Promise<Response> =>
  fetch(d.origin + path, { method: 'POST', headers: { ...IN, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString(), redirect: 'manual' });

/** The `<form>` whose action is `path`, or undefined. */
const formFor = (page: string, path: string): string | undefined => new RegExp(`<form[^>]*action="${path}"[^]*?</form>`).exec(page)?.[0];

describe('destructive actions ask first', () => {
  it('Retry all dead shows its count; a first POST answers a confirmation page and writes nothing; confirm=yes acts', async () => {
    const q = randomQueue('confirm');
    await buryJobs(f.conn, f.queues, q, [{ a: 1 }, { b: 2 }, { c: 3 }]);
    const page = await (await get(`/ops/queues/${q}?status=dead`)).text();
    expect(formFor(page, `/ops/queues/${q}/retry-dead`)).toContain('Retry all dead (3)…');
    const token = csrfOf(page);
    const ask = await post(`/ops/queues/${q}/retry-dead`, { _csrf: token });
    expect(ask.status).toBe(200);
    const body = await ask.text();
    expect(body).toContain(`Retry 3 dead job(s) of ${q}?`);
    const form = formFor(body, `/ops/queues/${q}/retry-dead`) ?? '';
    expect(form).toContain('name="confirm" value="yes"');
    expect(form).toContain('Retry 3 dead job(s)');
    expect((await f.queues.counts(q)).dead).toBe(3);
    expect((await post(`/ops/queues/${q}/retry-dead`, { _csrf: 'stale', confirm: 'yes' })).status).toBe(403); // the token still rules
    const done = await post(`/ops/queues/${q}/retry-dead`, { _csrf: token, confirm: 'yes' });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(`/ops/queues/${q}?status=dead&notice=retried-dead`);
    expect((await f.queues.counts(q)).dead).toBe(0);
  });

  it('Remove asks with the job and its status, then removes', async () => {
    const q = randomQueue('confirm-rm');
    const [id] = await buryJobs(f.conn, f.queues, q, [{ a: 1 }]);
    const page = await (await get(`/ops/queues/${q}/jobs/${id}`)).text();
    expect(formFor(page, `/ops/queues/${q}/jobs/${id}/remove`)).toContain('Remove…');
    const ask = await post(`/ops/queues/${q}/jobs/${id}/remove`, { _csrf: csrfOf(page) });
    expect(ask.status).toBe(200);
    expect(await ask.text()).toContain(`Remove job ${id} (dead) of ${q}`);
    expect((await f.queues.getJob(q, id))?.status).toBe('dead');
    const done = await post(`/ops/queues/${q}/jobs/${id}/remove`, { _csrf: csrfOf(page), confirm: 'yes' });
    expect(done.headers.get('location')).toBe(`/ops/queues/${q}?notice=removed`);
    expect(await f.queues.getJob(q, id)).toBeNull();
  });
});

describe('Cancel', () => {
  it('a pending or scheduled job: a Cancel button, a confirmation, then cancelled', async () => {
    const q = randomQueue('cancel');
    const pending = await f.queues.enqueue(q, { n: 1 });
    const later = await f.queues.enqueue(q, { n: 2 }, { delay: 600_000 });
    for (const [id, status] of [[pending, 'pending'], [later, 'scheduled']] as const) {
      const page = await (await get(`/ops/queues/${q}/jobs/${id}`)).text();
      expect(formFor(page, `/ops/queues/${q}/jobs/${id}/cancel`)).toContain('Cancel…');
      const ask = await post(`/ops/queues/${q}/jobs/${id}/cancel`, { _csrf: csrfOf(page) });
      expect(await ask.text()).toContain(`Cancel job ${id} (${status}) of ${q}? It will not run.`);
      expect((await f.queues.getJob(q, id))?.status).toBe(status);
      const done = await post(`/ops/queues/${q}/jobs/${id}/cancel`, { _csrf: csrfOf(page), confirm: 'yes' });
      expect(done.headers.get('location')).toBe(`/ops/queues/${q}/jobs/${id}?notice=cancelled`);
      expect((await f.queues.getJob(q, id))?.status).toBe('cancelled');
      const after = await (await get(`/ops/queues/${q}/jobs/${id}`)).text();
      expect(formFor(after, `/ops/queues/${q}/jobs/${id}/cancel`)).toBeUndefined();
    }
    const again = await post(`/ops/queues/${q}/jobs/${pending}/cancel`, { _csrf: csrfOf(await (await get(`/ops/queues/${q}`)).text()), confirm: 'yes' });
    expect(again.headers.get('location')).toContain('notice=not-cancelled');
  });

  it('an active job: a cooperative Cancel (no Remove); the request is flagged and the button goes away', async () => {
    const q = randomQueue('cancel-active');
    const id = await f.queues.enqueue(q, { n: 1 });
    await wire.claim(f.conn.scriptClient, queueKeys(q), 1, 30_000);
    const page = await (await get(`/ops/queues/${q}/jobs/${id}`)).text();
    expect(formFor(page, `/ops/queues/${q}/jobs/${id}/cancel`)).toContain('Cancel (cooperative)…');
    expect(formFor(page, `/ops/queues/${q}/jobs/${id}/remove`)).toBeUndefined();
    const ask = await post(`/ops/queues/${q}/jobs/${id}/cancel`, { _csrf: csrfOf(page) });
    expect(await ask.text()).toContain(`Ask running job ${id} of ${q} to stop?`);
    const done = await post(`/ops/queues/${q}/jobs/${id}/cancel`, { _csrf: csrfOf(page), confirm: 'yes' });
    expect(done.headers.get('location')).toBe(`/ops/queues/${q}/jobs/${id}?notice=cancel-requested`);
    expect(await f.queues.getJob(q, id)).toMatchObject({ status: 'active', cancelRequested: true });
    const after = await (await get(done.headers.get('location')!)).text();
    expect(after).toContain('Cancel requested: the running job stops');
    expect(formFor(after, `/ops/queues/${q}/jobs/${id}/cancel`)).toBeUndefined();
  });
});
