/**
 * Operating the sample exchange: `npm run sample:two`'s launcher keeps its Valkey while an
 * instance dies (a SIGKILLed one is restarted on its port and serves what was there; a cleanly
 * stopped one stays down and its printed command starts it again), a Valkey outage is answered
 * with 503 + `Retry-After: 1` (no unhandled client error) and 200 once it is back, and the
 * operator's surfaces (/stats, /metrics, the dashboard) want the admin key.
 */
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { deriveAdminKey, deriveApiKey } from '../../sample-app/config/exchange.config.js';
import { ADMIN_COOKIE } from '../../sample-app/web/admin.guard.js';
import type { ExchangeStats } from '../../sample-app/web/stats.controller.js';
import { fetchAs, post, spawnInstance, until, type ChildInstance } from './exchange.helpers.js';
import { alive, freePortPair, launchTwo, type Launched } from './exchange-launcher.helpers.js';

const ADMIN = { 'x-api-key': deriveAdminKey('dev-secret') };
const sell = (clientOrderId: string) => ({ account: 'bob', clientOrderId, symbol: 'ACME', side: 'sell', qty: 3, price: '250' });

describe('sample exchange: operations', () => {
  let launched: Launched | undefined;
  let manual: ChildInstance | undefined;
  let child: ChildInstance | undefined;
  let valkey: EmbeddedValkey | undefined;

  afterAll(async () => {
    await manual?.kill();
    await launched?.stop();
    await child?.kill();
    await valkey?.stop();
  });

  it('sample:two keeps its Valkey while an instance dies: restarts a killed one, prints how to restart a stopped one', async () => {
    const l = (launched = await launchTwo());
    const valkeyPid = Number(/embedded valkey-server at \S+ \(pid (\d+)\)/.exec(l.output())?.[1]);
    expect(alive(valkeyPid)).toBe(true);
    const run = Date.now().toString(36);
    const placed = await post(l.bases[1], '/orders', sell(`ops-${run}`));
    expect(placed.status).toBe(202);
    const { orderId } = (await placed.json()) as { orderId: string };

    // SIGKILL instance 2: the launcher restarts it on its port, on the same Valkey and data.
    const old = l.pid(1);
    process.kill(old, 'SIGKILL');
    const t0 = Date.now();
    await l.restarted(1, old);
    const backMs = Date.now() - t0;
    expect(alive(valkeyPid)).toBe(true);
    expect(l.output()).toMatch(/instance-2 killed by SIGKILL: restarting it in 1000 ms/);
    const seen = await fetchAs('bob', `${l.bases[1]}/orders/${orderId}`);
    expect(seen.status).toBe(200);
    expect(await seen.json()).toMatchObject({ orderId, account: 'bob', symbol: 'ACME' });
    // Not before the launcher's 1 s delay; the rest is the instance's start.
    expect(backMs).toBeGreaterThanOrEqual(1000);

    // SIGTERM instance 2: it stays down, the Valkey stays up, and the printed command brings it back.
    const cmd = new RegExp(`ECHOMQ_URL=(redis://\\S+) PORT=(\\d+) INSTANCE=instance-2 node dist/sample-app/main\\.js`).exec(l.output());
    expect(cmd).not.toBeNull();
    const [, url, port] = cmd!;
    expect(url).toBe(l.valkeyUrl);
    expect(`http://127.0.0.1:${port}`).toBe(l.bases[1]);
    process.kill(l.pid(1), 'SIGTERM');
    const down = /instance-2 (killed by SIGTERM|exited with code 0): stopped cleanly, stays down; Valkey stays up/;
    await until(async () => down.test(l.output()), 15_000, () => l.output().slice(-2000));
    await new Promise((r) => setTimeout(r, 1500));
    expect(await fetch(`${l.bases[1]}/health`).catch(() => undefined)).toBeUndefined();
    expect(alive(valkeyPid)).toBe(true);
    manual = await spawnInstance(url, 'instance-2', Number(port));
    const again = await fetchAs('bob', `${manual.base}/orders/${orderId}`);
    expect(again.status).toBe(200);
    expect(((await again.json()) as { orderId: string }).orderId).toBe(orderId);
    await manual.stop();
    manual = undefined;

    // Stopping the launcher stops its instances, then its Valkey.
    expect(await l.stop()).toBe(0);
    launched = undefined;
    await until(async () => !alive(valkeyPid), 5000, () => 'the launcher left its Valkey running');
    expect(l.output()).toMatch(/stopped embedded valkey-server/);
    expect(l.output()).not.toMatch(/Unhandled error event/);
  }, 120_000);

  it('answers 503 with Retry-After: 1 while Valkey is down, and 200 once it is back', async () => {
    const port = await freePortPair();
    valkey = await startEmbeddedValkey({ port });
    child = await spawnInstance(valkey.url, 'ops-503');
    expect((await fetch(`${child.base}/health`)).status).toBe(200);
    await valkey.stop();

    const key = { ...ADMIN };
    const bob = { 'x-api-key': deriveApiKey('dev-secret', 'bob') };
    const requests: [string, RequestInit][] = [
      ['/health', {}],
      ['/stats', { headers: key }],
      ['/orders', { method: 'POST', headers: { 'content-type': 'application/json', ...bob }, body: JSON.stringify(sell('down-1')) }],
      ['/orders/job0ItV94LNmpE', { headers: bob }],
    ];
    for (const [path, init] of requests) {
      const res = await fetch(`${child.base}${path}`, { ...init, signal: AbortSignal.timeout(10_000) });
      expect([path, res.status, res.headers.get('retry-after')]).toEqual([path, 503, '1']);
      const body = (await res.json()) as { statusCode: number; code: string };
      expect(body.statusCode).toBe(503);
      // The store's outage, or EchoMQ's (a connection down, or no node lease to mint an order id with).
      expect(['STORE_UNAVAILABLE', 'EMQ_UNAVAILABLE', 'EMQ_NODE_LEASE']).toContain(body.code);
    }

    valkey = await startEmbeddedValkey({ port });
    const t0 = Date.now();
    await until(async () => (await fetch(`${child!.base}/health`)).status === 200, 20_000, () => 'still not healthy after Valkey came back');
    const backMs = Date.now() - t0;
    expect(backMs).toBeLessThan(20_000);
    const out = child.output();
    expect(out).not.toMatch(/Unhandled error event/);
    // The store logs an outage once, not once per failed command.
    expect(out.match(/store connection lost/g)?.length).toBe(1);
    expect(out).toMatch(/store connection back after \d+ ms/);
  }, 90_000);

  it('keeps /stats, /metrics and the dashboard for the admin key (a browser: ?key= once, then a cookie)', async () => {
    const base = child!.base;
    for (const path of ['/stats', '/metrics', '/admin/queues']) {
      expect([path, (await fetch(`${base}${path}`)).status]).toEqual([path, 401]);
      expect([path, (await fetch(`${base}${path}`, { headers: { 'x-api-key': 'k_wrong_wrong_wrong_wrong' } })).status]).toEqual([path, 401]);
      // An account's key is not the admin key.
      expect([path, (await fetchAs('bob', `${base}${path}`)).status]).toEqual([path, 401]);
      expect([path, (await fetch(`${base}${path}`, { headers: ADMIN })).status]).toEqual([path, 200]);
    }
    const stats = (await (await fetch(`${base}/stats`, { headers: ADMIN })).json()) as ExchangeStats;
    expect(stats.self.instance).toBe('ops-503');
    expect(stats.latency.samples).toBe(stats.settled);
    expect((await (await fetch(`${base}/metrics`, { headers: ADMIN })).text())).toMatch(/^# HELP echomq_/m);

    const visit = await fetch(`${base}/admin/queues?key=${ADMIN['x-api-key']}`, { redirect: 'manual' });
    expect(visit.status).toBe(303);
    expect(visit.headers.get('location')).toBe('/admin/queues');
    const setCookie = visit.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(new RegExp(`^${ADMIN_COOKIE}=[0-9a-f]{64}; HttpOnly; SameSite=Strict`));
    expect(setCookie).not.toContain(ADMIN['x-api-key']);
    const page = await fetch(`${base}/admin/queues`, { headers: { cookie: setCookie.split(';')[0] } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<title>Queues');
    expect((await fetch(`${base}/admin/queues?key=nope`, { redirect: 'manual' })).status).toBe(401);
  }, 30_000);
});
