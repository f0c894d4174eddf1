/**
 * Issue 38 over HTTP: the queue page's filter form (GET parameters, the "examined N of T,
 * continue" pager, bad filters answered 400) and the Bus dead-letter pages (list newest first,
 * one entry whole, replay and purge asked on a confirmation page first; a replayed entry is
 * delivered to the group again; a read-only dashboard shows no button and refuses the POST).
 */
import type { Redis } from 'iovalkey';
import { queueKeys, topicKeys, wire } from '../../src/protocol.js';
import { deadLetters } from '../helpers/dead-letters.js';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import type { Json } from '../../src/core/codec.js';
import { csrfOf, startDashboardApp, type DashboardTestApp } from '../helpers/dashboard.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue, rawClient } from '../helpers/valkey.js';

const f = queueFixture();
const raw: Redis = rawClient();
const IN = { 'x-let-in': 'yes' };
let d: DashboardTestApp;
let ro: DashboardTestApp;
beforeAll(async () => {
  d = await startDashboardApp({ path: '/ops' });
  ro = await startDashboardApp({ path: '/ops', readOnly: true });
});
afterAll(async () => {
  await d?.app.close();
  await ro?.app.close();
  await raw.quit();
});

const get = (path: string, app = d): Promise<Response> => fetch(app.origin + path, { headers: IN, redirect: 'manual' });
const post = (path: string, form: Record<string, string>, app = d): Promise<Response> =>
  fetch(app.origin + path, { method: 'POST', headers: { ...IN, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form).toString(), redirect: 'manual' });
const jobRows = (body: string): string[] => [...body.matchAll(/<tr data-job="([^"]+)"/g)].map((m) => m[1]);

/** Enqueues, claims and buries one job per [payload, error]: resolves to their ids. */
async function buryWith(conn: EchoMqConnection, q: string, jobs: [Json, string][]): Promise<string[]> {
  const ids: string[] = [];
  for (const [p] of jobs) ids.push(await f.queues.enqueue(q, p));
  const k = queueKeys(q);
  const { jobs: claimed } = await wire.claim(conn.scriptClient, k, jobs.length, 30_000);
  for (const j of claimed) {
    await wire.retry(conn.scriptClient, k, { id: j.id, token: j.token, error: jobs[ids.indexOf(j.id)][1], fatal: true }, { maxAttempts: 1, backoff: 'f:50', deadCap: 1000 });
  }
  return ids;
}

describe('the queue page filter form', () => {
  const q = randomQueue('dash-search');
  let ids: string[];
  beforeAll(async () => {
    ids = await buryWith(
      f.conn,
      q,
      Array.from({ length: 60 }, (_, i): [Json, string] => [{ user: { id: i % 2 }, i }, i % 3 === 0 ? 'Error: Timeout <b>x</b>' : 'Other']),
    );
  });

  it('renders the form beside the search by id, and filters by error text with the examined pager', async () => {
    const plain = await (await get(`/ops/queues/${q}?status=dead`)).text();
    expect(plain).toContain('id="filter"');
    expect(plain).toContain(`action="/ops/queues/${q}/search"`);
    const res = await get(`/ops/queues/${q}?status=dead&error=timeout`);
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(jobRows(body).sort()).toEqual(ids.filter((_, i) => i % 3 === 0).sort());
    expect(body).toContain('Examined 60 of 60 dead entries');
    expect(body).toContain('Error: Timeout &lt;b&gt;x&lt;/b&gt;');
    expect(body).toContain('value="timeout"'); // the form keeps what was typed
    expect(body).toContain(`href="/ops/queues/${q}?status=done&amp;error=timeout"`); // and the tabs keep the filters
    expect(plain).toContain(`href="/ops/queues/${q}?status=done"`);
  });

  it('continues a filtered listing past 50 matches with the "Continue" link, keeping the filters', async () => {
    const first = await (await get(`/ops/queues/${q}?status=dead&field=user.id&equals=0&from=1h`)).text();
    const page1 = jobRows(first);
    expect(page1).toHaveLength(30);
    expect(first).not.toContain('id="next"');
    const all = await (await get(`/ops/queues/${q}?status=dead&payload=%22i%22`)).text();
    expect(jobRows(all)).toHaveLength(50);
    const next = /id="next" href="([^"]+)"/.exec(all)?.[1].replace(/&amp;/g, '&');
    expect(next).toContain('payload=%22i%22');
    const second = await (await get(next!.replace('/ops', '/ops'))).text();
    expect(jobRows(second)).toHaveLength(10);
    expect(new Set([...jobRows(all), ...jobRows(second)]).size).toBe(60);
    expect(second).toContain('Examined 60 of 60 dead entries');
  });

  it('answers bad filters with 400 and the typed error, never a 500', async () => {
    for (const qs of ['from=yesterday', 'to=2026-13-45T99:00', 'error=%2Ftime.*out%2F', 'equals=1', 'field=a..b&equals=1', `error=${'x'.repeat(201)}`, 'payload=a%1Bb', 'cursor=garbage&error=x']) {
      const res = await get(`/ops/queues/${q}?status=dead&${qs}`);
      const body = await res.text();
      expect([qs, res.status]).toEqual([qs, 400]);
      expect(body).toMatch(/EMQ_BAD_(OPTION|CURSOR)/);
    }
  });
});

describe('planted data on the new pages', () => {
  it('a filtered listing shows planted index members as unreadable rows; a dead log of another type is shown unreadable, not a 500', async () => {
    const q = randomQueue('dash-bad');
    const [good] = await buryWith(f.conn, q, [[{ n: 1 }, 'Timeout']]);
    const k = queueKeys(q);
    await raw.zadd(k.dead, Date.now() + 5, 'not a job id');
    const body = await (await get(`/ops/queues/${q}?status=dead&error=timeout`)).text();
    expect(jobRows(body).sort()).toEqual([good, 'not a job id'].sort());
    expect(body).toMatch(/data-problem="unreadable">unreadable: EMQ_BAD_ID /);
    const topic = randomQueue('dash-bad-dead');
    await deadLetters(f.conn, raw, topic, [{ n: 1 }]);
    const dk = topicKeys(topic).dead;
    await raw.del(dk);
    await raw.set(dk, 'not a stream');
    try {
      const res = await get(`/ops/bus/${topic}/dead-letters`);
      expect(res.status).toBe(200);
      expect(await res.text()).toMatch(/id="dead-unreadable">dead letters unreadable: EMQ_WRONGTYPE /);
      // A dead letter with planted fields still renders (defaults, never a throw).
      await raw.del(dk);
      const id = await raw.xadd(dk, '*', 'deliveries', 'many', 'at', 'soon', 'p', '{not json');
      const one = await get(`/ops/bus/${topic}/dead-letters/${id}`);
      expect(one.status).toBe(200);
      expect(await one.text()).toContain('(not JSON: as stored)');
    } finally {
      await raw.del(dk);
    }
  });
});

describe('the Bus dead-letter pages', () => {
  it('lists dead letters newest first with cursor pages, shows one whole, and links them from the Bus page', async () => {
    const topic = randomQueue('dash-dead');
    const dead = await deadLetters(f.conn, raw, topic, Array.from({ length: 55 }, (_, i) => ({ n: i, note: i === 54 ? '<script>x</script>' + 'y'.repeat(300) : 'ok' })));
    const bus = await (await get(`/ops/bus?after=${topic.slice(0, -1)}`)).text();
    expect(bus).toContain(`href="/ops/bus/${topic}/dead-letters"`);
    const res = await get(`/ops/bus/${topic}/dead-letters`);
    expect(res.status).toBe(200);
    const body = await res.text();
    const rows = [...body.matchAll(/<tr data-dead="([^"]+)"/g)].map((m) => m[1]);
    expect(rows).toEqual([...dead].reverse().slice(0, 50));
    expect(body).toContain('Error: handler failed');
    expect(body).not.toContain('<script>x');
    expect(body).toContain('<time datetime=');
    const next = /id="next" href="([^"]+)"/.exec(body)?.[1].replace(/&amp;/g, '&');
    const older = await (await get(next!)).text();
    expect([...older.matchAll(/<tr data-dead="([^"]+)"/g)].map((m) => m[1])).toEqual([...dead].reverse().slice(50));
    const one = await (await get(`/ops/bus/${topic}/dead-letters/${dead[54]}`)).text();
    expect(one).toContain('y'.repeat(300)); // the full payload, not the preview
    expect(one).toContain('&lt;script&gt;x&lt;/script&gt;');
    expect((await get(`/ops/bus/${topic}/dead-letters/1-1`)).status).toBe(404);
    expect((await get(`/ops/bus/${topic}/dead-letters?group=bad%20name`)).status).toBe(400);
    expect((await get(`/ops/bus/${topic}/dead-letters?cursor=nope`)).status).toBe(400);
    const other = await (await get(`/ops/bus/${topic}/dead-letters?group=g2`)).text();
    expect(other).toContain('No dead letters of this group');
  });

  it('replays one entry after a confirmation: the group receives it again as a new event; the dead letter is gone', async () => {
    const topic = randomQueue('dash-replay');
    const [first, second] = await deadLetters(f.conn, raw, topic, [{ n: 1 }, { n: 2 }]);
    const k = topicKeys(topic);
    const page = await (await get(`/ops/bus/${topic}/dead-letters?group=g1`)).text();
    expect(page).toContain('Replay all shown (2)');
    const csrf = csrfOf(page);
    // The first POST only asks, naming what it touches, and writes nothing.
    const ask = await post(`/ops/bus/${topic}/dead-letters/replay`, { _csrf: csrf, ids: first, group: 'g1' });
    expect(ask.status).toBe(200);
    const question = await ask.text();
    expect(question).toContain('id="confirm-question"');
    expect(question).toContain(`1 dead letter(s) of topic ${topic} (group g1; ${first})`);
    expect(question).toContain('every group of the topic receives it');
    expect(await raw.xlen(k.dead)).toBe(2);
    expect(question).toContain(`name="ids" value="${first}"`);
    const done = await post(`/ops/bus/${topic}/dead-letters/replay`, { _csrf: csrf, ids: first, group: 'g1', confirm: 'yes' });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(`/ops/bus/${topic}/dead-letters?group=g1&notice=dead-replayed`);
    expect((await raw.xrange(k.dead, '-', '+')).map(([id]) => id)).toEqual([second]);
    const again = (await raw.xreadgroup('GROUP', 'g1', 'c1', 'COUNT', 10, 'STREAMS', k.log, '>')) as [string, [string, string[]][]][];
    expect(again[0][1]).toHaveLength(1);
    expect(again[0][1][0][1]).toEqual(['p', JSON.stringify({ n: 1 })]);
    // Purge the rest, shown: asked first, then gone.
    const purgeAsk = await (await post(`/ops/bus/${topic}/dead-letters/purge`, { _csrf: csrf, ids: second })).text();
    expect(purgeAsk).toContain('cannot be undone');
    expect(await raw.xlen(k.dead)).toBe(1);
    expect((await post(`/ops/bus/${topic}/dead-letters/purge`, { _csrf: csrf, ids: second, confirm: 'yes' })).headers.get('location')).toContain('notice=dead-purged');
    expect(await raw.xlen(k.dead)).toBe(0);
    // Gone already: nothing to ask, nothing done.
    expect((await post(`/ops/bus/${topic}/dead-letters/replay`, { _csrf: csrf, ids: first })).headers.get('location')).toContain('notice=dead-gone');
    // Bad ids are bad input; no token is refused.
    expect((await post(`/ops/bus/${topic}/dead-letters/replay`, { _csrf: csrf, ids: 'x' })).status).toBe(400);
    expect((await post(`/ops/bus/${topic}/dead-letters/replay`, { ids: first, confirm: 'yes' })).status).toBe(403);
  });

  it('read-only: the pages show no button and a POST is refused, writing nothing', async () => {
    const topic = randomQueue('dash-ro');
    const [one] = await deadLetters(f.conn, raw, topic, [{ n: 1 }]);
    const list = await (await get(`/ops/bus/${topic}/dead-letters`, ro)).text();
    expect(list).toContain(`data-dead="${one}"`);
    expect(list).not.toContain('method="post"');
    expect(await (await get(`/ops/bus/${topic}/dead-letters/${one}`, ro)).text()).not.toContain('method="post"');
    const page = await (await get(`/ops/bus/${topic}/dead-letters`)).text();
    expect((await post(`/ops/bus/${topic}/dead-letters/replay`, { _csrf: csrfOf(page), ids: one, confirm: 'yes' }, ro)).status).toBe(403);
    expect(await raw.xlen(topicKeys(topic).dead)).toBe(1);
  });
});
