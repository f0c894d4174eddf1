import { BusService, CacheService, EchoMqDashboardModule, QueueAdmin } from '../../src/index.js';
import { globalKeys, queueKeys, topicKeys } from '../../src/protocol.js';
import { buryJobs, csrfOf, startDashboardApp, type DashboardTestApp } from '../helpers/dashboard.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

// Issue 12, the dashboard over plain HTTP: the guard, CSRF, escaping, CSP and bad input.
const f = queueFixture();
const IN = { 'x-let-in': 'yes' };
let d: DashboardTestApp;
let admin: QueueAdmin;
beforeAll(async () => {
  d = await startDashboardApp({ path: '/ops' });
  admin = new QueueAdmin(f.conn, f.queues);
});
afterAll(async () => {
  await d?.app.close();
});

const get = (path: string, headers: Record<string, string> = IN): Promise<Response> => fetch(d.origin + path, { headers, redirect: 'manual' });
const post = (path: string, form: Record<string, string>, headers: Record<string, string> = IN): Promise<Response> =>
  fetch(d.origin + path, { method: 'POST', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString(), redirect: 'manual' });

describe('the guard', () => {
  it('refuses a page and an action with 403 when it says no; serves the page when it says yes', async () => {
    const q = randomQueue('guard');
    await f.queues.enqueue(q, { n: 1 });
    expect((await get('/ops', {})).status).toBe(403);
    expect((await get(`/ops/queues/${q}`, {})).status).toBe(403);
    const page = await (await get(`/ops/queues/${q}`)).text();
    expect((await post(`/ops/queues/${q}/pause`, { _csrf: csrfOf(page) }, {})).status).toBe(403);
    expect((await admin.info(q)).paused).toBe(false);
    const ok = await get(`/ops?after=${q.slice(0, -1)}`); // the registry page holding q (the Valkey is shared)
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain(`href="/ops/queues/${q}"`);
  });

  it('a mount without a guard is refused when registered (EMQ_BAD_OPTION)', () => {
    expect(() => EchoMqDashboardModule.register({} as never)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(() => EchoMqDashboardModule.register({ guard: { canActivate: () => true }, path: 'no slash<' })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
  });
});

describe('escaping and the Content-Security-Policy', () => {
  it('shows a payload, a result and an error containing markup as text, and forbids inline scripts but its own', async () => {
    const q = randomQueue('xss');
    const evil = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">';
    const [id] = await buryJobs(f.conn, f.queues, q, [{ note: evil }]);
    const res = await get(`/ops/queues/${q}/jobs/${id}`);
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).not.toContain('<script>window.__pwned');
    expect(body).not.toContain('<img src=x');
    expect(body).toContain('&lt;script&gt;window.__pwned = 1&lt;/script&gt;');
    expect(body).toContain('Error: &lt;b&gt;boom&lt;/b&gt;');
    const csp = res.headers.get('content-security-policy') ?? '';
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    expect(nonce).toBeDefined();
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    // Every script element of the page is the dashboard's own, bound to this response's nonce.
    const scripts = body.match(/<script[^>]*>/g) ?? [];
    expect(scripts).toEqual([`<script nonce="${nonce}">`]);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });
});

describe('actions are POSTs with the page token', () => {
  it('pause without the token, with a wrong token or from another site is refused (403) and writes nothing; with it, pauses and redirects', async () => {
    const q = randomQueue('csrf');
    await f.queues.enqueue(q, { n: 1 });
    const token = csrfOf(await (await get(`/ops/queues/${q}`)).text());
    expect((await post(`/ops/queues/${q}/pause`, {})).status).toBe(403);
    expect((await post(`/ops/queues/${q}/pause`, { _csrf: token.slice(1) + 'x' })).status).toBe(403);
    expect((await post(`/ops/queues/${q}/pause`, { _csrf: token }, { ...IN, 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await post(`/ops/queues/${q}/pause`, { _csrf: token }, { ...IN, origin: 'https://evil.example' })).status).toBe(403);
    expect((await get(`/ops/queues/${q}/pause`)).status).toBe(404); // a GET never mutates
    expect((await admin.info(q)).paused).toBe(false);
    const res = await post(`/ops/queues/${q}/pause`, { _csrf: token }, { ...IN, 'sec-fetch-site': 'same-origin', origin: d.origin });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`/ops/queues/${q}?notice=paused`);
    expect((await admin.info(q)).paused).toBe(true);
    const shown = await (await get(res.headers.get('location')!)).text();
    expect(shown).toContain('class="paused"');
    expect(shown).toContain('Paused: consumers claim nothing more');
  });

  it('retry, remove and promote act on one job; a job in the wrong state is refused with a notice, not an error', async () => {
    const q = randomQueue('act');
    const [dead, other] = await buryJobs(f.conn, f.queues, q, [{ a: 1 }, { b: 2 }]);
    const token = csrfOf(await (await get(`/ops/queues/${q}?status=dead`)).text());
    const retried = await post(`/ops/queues/${q}/jobs/${dead}/retry`, { _csrf: token });
    expect(retried.headers.get('location')).toBe(`/ops/queues/${q}/jobs/${dead}?notice=retried`);
    expect((await f.queues.getJob(q, dead))?.status).toBe('scheduled'); // revived: due now, fresh attempts
    const again = await post(`/ops/queues/${q}/jobs/${dead}/retry`, { _csrf: token });
    expect(again.headers.get('location')).toContain('notice=not-dead');
    const promoted = await post(`/ops/queues/${q}/jobs/${other}/promote`, { _csrf: token });
    expect(promoted.headers.get('location')).toContain('notice=not-scheduled');
    const removed = await post(`/ops/queues/${q}/jobs/${other}/remove`, { _csrf: token, confirm: 'yes' });
    expect(removed.headers.get('location')).toBe(`/ops/queues/${q}?notice=removed`);
    expect(await f.queues.getJob(q, other)).toBeNull();
  });
});

describe('bad input gets an error page with its status, never a 500', () => {
  it('unknown queue 404, bad id 400, unknown job 404, bad cursor 400, bad status 400, unknown page 404, bad escape 400', async () => {
    const q = randomQueue('bad');
    const [id] = await buryJobs(f.conn, f.queues, q, [{ x: 1 }]);
    const missing = id.slice(0, -2) + (id.endsWith('00') ? '11' : '00');
    const cases: [string, number, string][] = [
      [`/ops/queues/${randomQueue('nobody')}`, 404, 'EMQ_NOT_FOUND'],
      [`/ops/queues/${q}/jobs/jobZZZZZZZZZZZ`, 400, 'EMQ_BAD_ID'], // the branded form, beyond 64 bits
      [`/ops/queues/${q}/jobs/not-an-id`, 404, 'EMQ_NOT_FOUND'], // a business id no job holds
      [`/ops/queues/${q}/jobs/${missing}`, 404, 'EMQ_NOT_FOUND'],
      [`/ops/queues/${q}?status=dead&cursor=garbage!`, 400, 'EMQ_BAD_CURSOR'],
      [`/ops/queues/${q}?status=done&cursor=${encodeURIComponent(Buffer.from(`c1|other|done|1|${id}`).toString('base64url'))}`, 400, 'EMQ_BAD_CURSOR'],
      [`/ops/queues/${q}?status=nonsense`, 400, 'EMQ_BAD_OPTION'],
      [`/ops/queues/${q}/search?id=a%01b`, 400, 'EMQ_BAD_ID'],
      [`/ops/queues/${q}/search?id=%3Cscript%3E`, 404, 'EMQ_NOT_FOUND'],
      ['/ops/?after=', 400, 'EMQ_BAD_NAME'],
      ['/ops/nowhere', 404, 'no such page'],
    ];
    for (const [path, status, text] of cases) {
      const res = await get(path);
      const body = await res.text();
      expect({ path, status: res.status }).toEqual({ path, status });
      expect(body).toContain(text);
      expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    }
    expect(await (await get(`/ops/queues/${q}/search?id=%3Cscript%3E`)).text()).not.toContain('<script>'); // the unknown business id, escaped
    expect((await get('/ops/queues/%E0%A4%A')).status).toBe(400); // Express refuses the escape before the dashboard sees it
    expect(body404Escapes(await (await get('/ops/queues/%3Cscript%3Ex')).text())).toBe(true);
    const token = csrfOf(await (await get(`/ops/queues/${q}`)).text());
    expect((await post(`/ops/queues/${q}/jobs/a%01b/retry`, { _csrf: token })).status).toBe(400);
    expect((await post(`/ops/queues/${q}/jobs/nope/retry`, { _csrf: token })).status).toBe(404);
    expect((await post(`/ops/queues/${randomQueue('nobody')}/pause`, { _csrf: token })).status).toBe(404);
    expect((await post(`/ops/queues/${q}/explode`, { _csrf: token })).status).toBe(404);
    expect((await fetch(`${d.origin}/ops/`, { method: 'DELETE', headers: IN })).status).toBe(405);
    const search = await get(`/ops/queues/${q}/search?id=${id}`);
    expect(search.status).toBe(303);
    expect(search.headers.get('location')).toBe(`/ops/queues/${q}/jobs/${id}`);
    // A business id: the search lands on the wire id's page, which shows it; its own URL works too.
    const byRef = await f.queues.enqueue(q, { y: 1 }, { id: 'order-<7>' });
    const found = await get(`/ops/queues/${q}/search?id=${encodeURIComponent('order-<7>')}`);
    expect(found.headers.get('location')).toBe(`/ops/queues/${q}/jobs/${byRef}`);
    const page = await (await get(`/ops/queues/${q}/jobs/${encodeURIComponent('order-<7>')}`)).text();
    expect(page).toContain(`Job ${byRef}`);
    expect(page).toContain('data-field="business id">order-&lt;7&gt;');
  });
});

/** A queue name with markup is echoed escaped in the 404 page (or refused as a bad name). */
function body404Escapes(body: string): boolean {
  return !body.includes('<script>x') && (body.includes('&lt;script&gt;x') || body.includes('EMQ_BAD_NAME'));
}

describe('an unreadable queue', () => {
  it('shows as a row with its error code; the rest of the page is served', async () => {
    const [broken, fine] = [randomQueue('b-broken'), randomQueue('b-fine')].sort();
    await f.queues.enqueue(broken, { n: 1 });
    await f.queues.enqueue(fine, { n: 1 });
    const done = queueKeys(broken).done;
    await eventually(async () => (await f.raw.zscore(globalKeys.queues, broken)) !== null && (await f.raw.zscore(globalKeys.queues, fine)) !== null, 5000, 'announced');
    await f.raw.set(done, 'not a zset');
    try {
      const res = await get(`/ops/?after=${broken.slice(0, -1)}`);
      expect(res.status).toBe(200);
      const body = await res.text();
      expect(body).toContain('unreadable: EMQ_WRONGTYPE');
      expect(body).toMatch(new RegExp(`data-queue="${fine}">[\\s\\S]*?data-count="pending">1<`));
    } finally {
      await f.raw.del(done); // other specs list every queue
    }
  });
});

describe('the Bus and Cache pages', () => {
  it('list topics with each group\'s lag and pending, and cache namespaces with this app\'s counters', async () => {
    const t = randomQueue('dash-topic');
    await d.app.get(BusService).publishMany(t, [{ n: 1 }, { n: 2 }, { n: 3 }]);
    await f.raw.xgroup('CREATE', topicKeys(t).log, 'slow<b>', '0');
    const ns = randomQueue('dash-ns');
    const cache = d.app.get(CacheService);
    await cache.set('k', { v: 1 }, { namespace: ns });
    await cache.invalidate('k', { namespace: ns });
    let bus = '';
    await eventually(async () => (bus = await (await get(`/ops/bus?after=${t.slice(0, -1)}`)).text()).includes(`data-topic="${t}"`), 5000, 'the topic listed');
    const row = bus.slice(bus.indexOf(`data-topic="${t}"`));
    expect(row).toContain('<td>slow&lt;b&gt;</td><td class="n" data-lag>3</td><td class="n">0</td>');
    let page = '';
    await eventually(async () => (page = await (await get(`/ops/cache?after=${ns.slice(0, -1)}`)).text()).includes(`data-namespace="${ns}"`), 5000, 'the namespace listed');
    expect(page).toMatch(new RegExp(`data-namespace="${ns}"><td>${ns}</td><td class="n">2</td>`)); // the set and the invalidation, both in its log
    expect(Number(/data-stat="invalidations">(\d+)</.exec(page)?.[1])).toBeGreaterThanOrEqual(1);
    expect(page).toContain(`href="/ops/bus"`);
    expect((await get('/ops/bus?after=')).status).toBe(400);
  });
});

describe('read-only', () => {
  it('renders no buttons and refuses every action with 403', async () => {
    const ro = await startDashboardApp({ path: '/ro', readOnly: true });
    try {
      const q = randomQueue('ro');
      await buryJobs(f.conn, f.queues, q, [{ x: 1 }]);
      const page = await (await fetch(`${ro.origin}/ro/queues/${q}?status=dead`, { headers: IN })).text();
      expect(page).not.toContain('<form class="inline" method="post"');
      expect(page).toContain('read-only');
      const res = await fetch(`${ro.origin}/ro/queues/${q}/pause`, { method: 'POST', headers: IN, redirect: 'manual' });
      expect(res.status).toBe(403);
      expect((await admin.info(q)).paused).toBe(false);
    } finally {
      await ro.app.close();
    }
  });
});
