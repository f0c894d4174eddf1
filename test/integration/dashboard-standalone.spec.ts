import { networkInterfaces } from 'node:os';
import { QueueAdmin } from '../../src/index.js';
import { freePort } from '../../src/testing.js';
import { spawnScript, type ChildHandle } from '../helpers/child.js';
import { MAIN } from '../helpers/cli.js';
import { csrfOf } from '../helpers/dashboard.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue, testUrl } from '../helpers/valkey.js';

// Issue 12: `npx echomq dashboard` binds loopback and requires a token unless told otherwise.
const f = queueFixture();
const TOKEN = 'tok-' + 'x'.repeat(20);

/** Starts the CLI's dashboard on a free port; resolves with the child and the URL it printed. */
async function serve(...extra: string[]): Promise<{ child: ChildHandle; url: URL; origin: string }> {
  const port = await freePort();
  const child = spawnScript(MAIN, ['--url', testUrl(), 'dashboard', '--port', String(port), ...extra]);
  const [, printed] = await child.waitForLine(/^EchoMQ dashboard: (\S+)$/);
  const url = new URL(printed);
  return { child, url, origin: url.origin };
}

const get = (url: string, headers: Record<string, string> = {}): Promise<Response> => fetch(url, { headers, redirect: 'manual' });

describe('the standalone dashboard', () => {
  it('with --token: 401 without it or with a wrong one; Bearer, or ?token= then its cookie, let in; binds loopback', async () => {
    const { child, url, origin } = await serve('--token', TOKEN);
    expect(url.hostname).toBe('127.0.0.1');
    expect(url.searchParams.get('token')).toBe(TOKEN);
    const q = randomQueue('solo');
    await f.queues.enqueue(q, { n: 1 });
    expect((await get(`${origin}/`)).status).toBe(401);
    expect((await get(`${origin}/queues/${q}`)).status).toBe(401);
    expect((await get(`${origin}/?token=wrong`)).status).toBe(401);
    expect((await get(`${origin}/`, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await fetch(`${origin}/queues/${q}/pause`, { method: 'POST' })).status).toBe(401);
    expect((await get(`${origin}/`, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
    const entry = await get(`${origin}/queues/${q}?status=pending&token=${TOKEN}`);
    expect(entry.status).toBe(303);
    expect(entry.headers.get('location')).toBe(`/queues/${q}?status=pending`);
    const setCookie = entry.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    const cookie = setCookie.split(';')[0];
    const page = await get(`${origin}/queues/${q}`, { cookie });
    expect(page.status).toBe(200);
    const body = await page.text();
    expect(body).toContain('data-count="pending">1<');
    // An action needs the cookie and the page's form token.
    const form = new URLSearchParams({ _csrf: csrfOf(body) }).toString();
    const headers = { cookie, 'content-type': 'application/x-www-form-urlencoded' };
    expect((await fetch(`${origin}/queues/${q}/pause`, { method: 'POST', headers: { ...headers }, body: '_csrf=nope', redirect: 'manual' })).status).toBe(403);
    expect((await fetch(`${origin}/queues/${q}/pause`, { method: 'POST', headers, body: form, redirect: 'manual' })).status).toBe(303);
    expect((await new QueueAdmin(f.conn, f.queues).info(q)).paused).toBe(true);
    // Bad input is an error page of the dashboard's own here (no Express in front).
    const bad = await get(`${origin}/queues/%E0%A4%A`, { cookie });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('malformed percent-encoding');
    // Loopback only: another address of this machine refuses the connection.
    const other = Object.values(networkInterfaces()).flat().find((i) => i && i.family === 'IPv4' && !i.internal);
    if (other) await expect(fetch(`http://${other.address}:${url.port}/`)).rejects.toThrow();
    child.signal('SIGTERM');
    expect((await child.exited).code).toBe(0);
  });

  it('without --token generates and prints one; --no-token serves without one', async () => {
    const gen = await serve();
    const token = gen.url.searchParams.get('token') ?? '';
    expect(token.length).toBeGreaterThanOrEqual(20);
    expect((await get(`${gen.origin}/`)).status).toBe(401);
    expect((await get(`${gen.origin}/`, { authorization: `Bearer ${token}` })).status).toBe(200);
    gen.child.signal('SIGINT');
    expect((await gen.child.exited).code).toBe(0);

    const open = await serve('--no-token');
    expect(open.url.search).toBe('');
    expect((await get(`${open.origin}/`)).status).toBe(200);
    open.child.signal('SIGTERM');
    expect((await open.child.exited).code).toBe(0);
  });

  it('refuses a short token and a bad port as usage errors (exit 1)', async () => {
    const short = spawnScript(MAIN, ['--url', testUrl(), 'dashboard', '--token', 'short']);
    expect((await short.exited).code).toBe(1);
    expect(short.stderr()).toContain('at least 16 characters');
    const port = spawnScript(MAIN, ['--url', testUrl(), 'dashboard', '--port', '70000']);
    expect((await port.exited).code).toBe(1);
  });
});
