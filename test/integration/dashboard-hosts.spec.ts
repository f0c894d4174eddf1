import { EchoMqDashboardModule, QueueAdmin } from '../../src/index.js';
import { freePort } from '../../src/testing.js';
import { spawnScript, type ChildHandle } from '../helpers/child.js';
import { MAIN } from '../helpers/cli.js';
import { csrfOf, rawRequest, startDashboardApp, type DashboardTestApp } from '../helpers/dashboard.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue, testUrl } from '../helpers/valkey.js';

// Issue 38, item 1: DNS rebinding. A Host allow-list (421 for any other Host), and the Origin of a
// POST compared with the allowed origins, never with the request's own Host.
const f = queueFixture();
const IN = { 'x-let-in': 'yes' };
const TOKEN = 'tok-' + 'y'.repeat(20);
let admin: QueueAdmin;
beforeAll(() => {
  admin = new QueueAdmin(f.conn, f.queues);
});

/** The dashboard's page of a fresh queue with one pending job: its name and the page's form token. */
async function queueWithPage(port: number, path: string, headers: Record<string, string>): Promise<{ q: string; csrf: string }> {
  const q = randomQueue('rebind');
  await f.queues.enqueue(q, { n: 1 });
  const page = await rawRequest(port, 'GET', `${path}/queues/${q}`, headers);
  expect(page.status).toBe(200);
  return { q, csrf: csrfOf(page.body) };
}

describe('the standalone dashboard', () => {
  let child: ChildHandle | undefined;
  afterEach(async () => {
    child?.signal('SIGTERM');
    await child?.exited;
    child = undefined;
  });

  /** Serves `npx echomq dashboard` on a free port with `extra` flags. */
  async function serve(...extra: string[]): Promise<number> {
    const port = await freePort();
    child = spawnScript(MAIN, ['--url', testUrl(), 'dashboard', '--port', String(port), ...extra]);
    await child.waitForLine(/^EchoMQ dashboard: (\S+)$/);
    return port;
  }

  it('--no-token: a foreign Host gets 421 (no page, no form token), the loopback names are served, and a warning is logged', async () => {
    const port = await serve('--no-token');
    const evil = `attacker.example:${port}`;
    const refused = await rawRequest(port, 'GET', '/', { host: evil });
    expect(refused.status).toBe(421);
    expect(refused.body).not.toContain('_csrf');
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `LOCALHOST:${port}`]) expect({ host, status: (await rawRequest(port, 'GET', '/', { host })).status }).toEqual({ host, status: 200 });
    expect((await rawRequest(port, 'GET', '/', { host: `localhost:${port + 1}` })).status).toBe(421); // the loopback names with this port only
    const { q, csrf } = await queueWithPage(port, '', { host: `127.0.0.1:${port}` });
    const body = new URLSearchParams({ _csrf: csrf }).toString();
    // The rebinding attack: the attacker's page posts with its own Host and an Origin equal to it.
    const rebound = await rawRequest(port, 'POST', `/queues/${q}/pause`, { host: evil, origin: `http://${evil}`, 'sec-fetch-site': 'same-origin' }, body);
    expect(rebound.status).toBe(421);
    // A foreign Origin is refused even with an allowed Host.
    const foreign = await rawRequest(port, 'POST', `/queues/${q}/pause`, { host: `127.0.0.1:${port}`, origin: `http://${evil}` }, body);
    expect(foreign.status).toBe(403);
    expect((await admin.info(q)).paused).toBe(false);
    const ok = await rawRequest(port, 'POST', `/queues/${q}/pause`, { host: `127.0.0.1:${port}`, origin: `http://localhost:${port}`, 'sec-fetch-site': 'same-origin' }, body);
    expect(ok.status).toBe(303);
    expect((await admin.info(q)).paused).toBe(true);
    expect(child!.stderr()).toMatch(/echomq: warning: EchoMQ dashboard: serving 127\.0\.0\.1:\d+ without a token/);
  });

  it('with a token: a foreign Host is refused before the token is looked at; --allowed-host adds a name', async () => {
    const port = await serve('--token', TOKEN, '--allowed-host', 'ops.example', '--allowed-host', 'Pinned.Example:1');
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await rawRequest(port, 'GET', '/', { ...auth, host: `attacker.example:${port}` })).status).toBe(421);
    expect((await rawRequest(port, 'GET', `/?token=${TOKEN}`, { host: `attacker.example:${port}` })).status).toBe(421);
    expect((await rawRequest(port, 'GET', '/', { ...auth, host: `ops.example:${port}` })).status).toBe(200);
    expect((await rawRequest(port, 'GET', '/', { ...auth, host: 'ops.example' })).status).toBe(200);
    expect((await rawRequest(port, 'GET', '/', { ...auth, host: 'pinned.example:1' })).status).toBe(200);
    expect((await rawRequest(port, 'GET', '/', { ...auth, host: `pinned.example:${port}` })).status).toBe(421);
    expect((await rawRequest(port, 'GET', '/', { host: `127.0.0.1:${port}` })).status).toBe(401);
    expect(child!.stderr()).not.toContain('without a token');
    const { q, csrf } = await queueWithPage(port, '', { ...auth, host: `ops.example:${port}` });
    const body = new URLSearchParams({ _csrf: csrf }).toString();
    expect((await rawRequest(port, 'POST', `/queues/${q}/pause`, { ...auth, host: `ops.example:${port}`, origin: `https://ops.example` }, body)).status).toBe(303);
  });

  it('a malformed --allowed-host is a usage error (exit 1)', async () => {
    const bad = spawnScript(MAIN, ['--url', testUrl(), 'dashboard', '--port', String(await freePort()), '--allowed-host', 'evil/path']);
    expect((await bad.exited).code).toBe(1);
    expect(bad.stderr()).toContain('EMQ_BAD_OPTION an allowed host must look like');
  });
});

describe('the mounted dashboard', () => {
  let d: DashboardTestApp;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    d = await startDashboardApp({ path: '/ops', allowedHosts: [`127.0.0.1:${port}`] }, [], false, port);
  });
  afterAll(async () => {
    await d?.app.close();
  });

  it('with allowedHosts: a foreign Host gets 421 even past the guard; a POST from another origin is 403 whatever its Host', async () => {
    const evil = `attacker.example:${port}`;
    const refused = await rawRequest(port, 'GET', '/ops', { ...IN, host: evil });
    expect(refused.status).toBe(421);
    expect(refused.body).not.toContain('name="_csrf"');
    const { q, csrf } = await queueWithPage(port, '/ops', { ...IN, host: `127.0.0.1:${port}` });
    const body = new URLSearchParams({ _csrf: csrf }).toString();
    expect((await rawRequest(port, 'POST', `/ops/queues/${q}/pause`, { ...IN, host: evil, origin: `http://${evil}` }, body)).status).toBe(421);
    expect((await rawRequest(port, 'POST', `/ops/queues/${q}/pause`, { ...IN, host: `127.0.0.1:${port}`, origin: `http://${evil}` }, body)).status).toBe(403);
    expect((await rawRequest(port, 'POST', `/ops/queues/${q}/pause`, { ...IN, host: `127.0.0.1:${port}`, origin: 'null' }, body)).status).toBe(403);
    expect((await admin.info(q)).paused).toBe(false);
    expect((await rawRequest(port, 'POST', `/ops/queues/${q}/pause`, { ...IN, host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` }, body)).status).toBe(303);
    expect((await admin.info(q)).paused).toBe(true);
  });

  it('allowedOrigins replaces the origins of the allowed hosts', async () => {
    const port2 = await freePort();
    const d2 = await startDashboardApp({ path: '/o2', allowedHosts: [`127.0.0.1:${port2}`], allowedOrigins: ['https://ops.example'] }, [], false, port2);
    try {
      const { q, csrf } = await queueWithPage(port2, '/o2', { ...IN, host: `127.0.0.1:${port2}` });
      const body = new URLSearchParams({ _csrf: csrf }).toString();
      const host = `127.0.0.1:${port2}`;
      expect((await rawRequest(port2, 'POST', `/o2/queues/${q}/pause`, { ...IN, host, origin: `http://${host}` }, body)).status).toBe(403);
      expect((await rawRequest(port2, 'POST', `/o2/queues/${q}/pause`, { ...IN, host, origin: 'https://ops.example' }, body)).status).toBe(303);
    } finally {
      await d2.app.close();
    }
  });

  it('without allowedHosts, an Origin is never judged by the Host: it passes only beside Sec-Fetch-Site: same-origin', async () => {
    const port3 = await freePort();
    const d3 = await startDashboardApp({ path: '/o3' }, [], false, port3);
    try {
      const host = `attacker.example:${port3}`; // no allow-list: the guard is the defence
      const { q, csrf } = await queueWithPage(port3, '/o3', { ...IN, host });
      const body = new URLSearchParams({ _csrf: csrf }).toString();
      expect((await rawRequest(port3, 'POST', `/o3/queues/${q}/pause`, { ...IN, host, origin: `http://${host}` }, body)).status).toBe(403);
      expect((await admin.info(q)).paused).toBe(false);
      expect((await rawRequest(port3, 'POST', `/o3/queues/${q}/pause`, { ...IN, host, origin: `http://${host}`, 'sec-fetch-site': 'same-origin' }, body)).status).toBe(303);
    } finally {
      await d3.app.close();
    }
  });

  it('refuses malformed allow-lists when registered (EMQ_BAD_OPTION)', () => {
    const guard = { canActivate: () => true };
    for (const bad of [{ allowedHosts: ['evil/path'] }, { allowedHosts: [] }, { allowedHosts: 'x' }, { allowedOrigins: ['https://ops.example/path'] }, { allowedOrigins: ['ftp://x'] }]) {
      expect(() => EchoMqDashboardModule.register({ guard, ...(bad as object) })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    }
  });
});
