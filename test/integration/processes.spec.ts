/**
 * Issue 38, the processes view: node.lua's describing form (an optional third key `{emq}:procs`
 * and a fifth argument, the process's description), the admin's `processes()`, `echomq
 * processes` and the dashboard's /processes page. A process describes itself on the renewals it
 * already sends; a graceful stop removes its entry; a crashed one shows as gone once its lease
 * lapses, never as live.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'iovalkey';
import { QueueAdmin } from '../../src/admin/queue-admin.js';
import type { ProcessList, ProcessView } from '../../src/admin/processes.js';
import { connectClient, EchoMqConnection, ECHOMQ_VERSION } from '../../src/core/connection/index.js';
import { startEmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { globalKeys } from '../../src/core/keys.js';
import type { ScriptClient } from '../../src/core/scripts.js';
import { wire } from '../../src/core/wire/queue.js';
import { DashboardApp } from '../../src/dashboard/dashboard-app.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { Consumer } from '../../src/queue/consumer/consumer.js';
import { spawnFixture } from '../helpers/child.js';
import { runCli } from '../helpers/cli.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

const f = queueFixture();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mine = (list: ProcessList, owner: string): ProcessView | undefined => list.items.find((p) => p.owner === owner);
const INFO = JSON.stringify({ host: 'h', pid: 1, runtime: 'go', version: '0', started: 1 });

/** A consumer of `queue` on `conn` whose handler waits for `release()`. */
function blockingConsumer(conn: EchoMqConnection, queue: string, concurrency: number): { consumer: Consumer; release: () => void } {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const consumer = new Consumer(conn, {
    queue,
    handler: () => gate,
    concurrency,
    leaseMs: 30_000,
    attempts: 1,
    backoff: 'f:100',
    keepDone: 10,
    deadCap: 10,
    maxResultBytes: 1024,
    maxIdleMs: 500,
  });
  return { consumer, release };
}

describe('node.lua describing form (additive)', () => {
  it('the two-key call is unchanged: it claims and renews without reading or writing {emq}:procs', async () => {
    const c = f.conn.scriptClient;
    const owner = `old-${randomQueue('o')}`;
    const n = await wire.node(c, owner, 60_000);
    try {
      expect(n).toBeGreaterThanOrEqual(0);
      expect(await wire.node(c, owner, 60_000, n)).toBe(n);
      expect(await f.raw.hget(globalKeys.procs, String(n))).toBeNull();
      // An old runtime's lease shows live, with no description.
      const p = mine(await new QueueAdmin(f.conn, f.queues).processes(), owner);
      expect(p).toMatchObject({ node: n, state: 'live' });
      expect(p?.info).toBeUndefined();
    } finally {
      await wire.node(c, owner, 0, n);
    }
  });

  it('refuses a bad info with EMQ_BAD_ARG and writes nothing (lease, counter and descriptions unchanged)', async () => {
    const c = f.conn.scriptClient;
    const owner = `bad-${randomQueue('o')}`;
    const before = [await f.raw.get(globalKeys.nodeSeq), await f.raw.hlen(globalKeys.procs)];
    for (const info of ['x'.repeat(10), '[1]', '{"a":1', `{"h":"${'x'.repeat(8190)}"}`, '{"h":"\u0001"}', '{"h":"\u007f"}']) {
      await expect(wire.node(c, owner, 60_000, undefined, info)).rejects.toMatchObject({ code: 'EMQ_BAD_ARG' });
    }
    expect([await f.raw.get(globalKeys.nodeSeq), await f.raw.hlen(globalKeys.procs)]).toEqual(before);
    const leases = await f.raw.hgetall(globalKeys.nodes);
    expect(Object.values(leases).some((v) => v.startsWith(owner))).toBe(false);
  });

  it('refuses {emq}:procs of the wrong type with EMQ_WRONGTYPE, writing nothing; the processes view reports it (a private server)', async () => {
    const v = await startEmbeddedValkey();
    const raw = new Redis(v.url, { maxRetriesPerRequest: 1 });
    const conn = new EchoMqConnection({ url: v.url });
    try {
      await raw.set(globalKeys.procs, 'x');
      await expect(wire.node(raw as unknown as ScriptClient, 'a', 60_000, undefined, INFO)).rejects.toMatchObject({ code: 'EMQ_WRONGTYPE' });
      expect([await raw.exists(globalKeys.nodes), await raw.exists(globalKeys.nodeSeq)]).toEqual([0, 0]);
      await connectClient(conn.client);
      const list = await new QueueAdmin(conn, new QueueService(conn)).processes();
      expect(list.error).toMatch(/EMQ_WRONGTYPE/);
      expect(list.unreadable).toBe(1);
    } finally {
      await conn.close();
      raw.disconnect();
      await v.stop();
    }
  });
});

describe('the processes view', () => {
  it('lists a running consumer with its queue, concurrency and active jobs, and drops it after a graceful stop', async () => {
    const q = randomQueue('proc');
    const conn = new EchoMqConnection({ url: testUrl() });
    await conn.open();
    const { consumer, release } = blockingConsumer(conn, q, 4);
    const admin = new QueueAdmin(f.conn, f.queues);
    try {
      await consumer.start();
      await f.queues.enqueue(q, { n: 1 });
      await f.queues.enqueue(q, { n: 2 });
      await eventually(() => consumer.running === 2, 5000, 'two jobs running');
      await conn.ids.renew(); // the description rides the renewal (every 15 s by default)
      const list = await admin.processes();
      const p = mine(list, conn.ids.owner);
      expect(p).toMatchObject({ node: conn.node, state: 'live', info: { pid: process.pid, runtime: `node ${process.versions.node}`, version: ECHOMQ_VERSION, queues: [{ name: q, concurrency: 4, active: 2 }], groups: [], roles: [] } });
      // The heartbeat is on the server clock, the lease runs out a lease later.
      expect(Math.abs(p!.heartbeatAt!.getTime() - list.now.getTime())).toBeLessThan(2000);
      expect(p!.leaseExpiresAt!.getTime() - p!.heartbeatAt!.getTime()).toBe(60_000);
      expect(list.live).toBeGreaterThanOrEqual(1);

      // The CLI prints it (table and --json) with the queue, active/concurrency and pid.
      const table = await runCli(['--url', testUrl(), 'processes']);
      expect([table.code, table.stderr.replace(/echomq: warning: .*\n/g, '')]).toEqual([0, '']);
      const line = table.stdout.split('\n').find((l) => l.includes(q));
      expect(line).toContain(`${q} 2/4`);
      expect(line).toContain(String(process.pid));
      expect(line).toContain('live');
      const json = await runCli(['--url', testUrl(), '--json', 'processes']);
      const parsed = JSON.parse(json.stdout) as { items: { owner?: string; state: string; info?: { queues: unknown[] } }[] };
      expect(parsed.items.find((i) => i.owner === conn.ids.owner)).toMatchObject({ state: 'live', info: { queues: [{ name: q, concurrency: 4, active: 2 }] } });

      // The dashboard's page shows the row, its queue link and the live region.
      const app = new DashboardApp({ queues: admin }, { readOnly: true, refreshMs: 5000 });
      const res = await app.handle({ method: 'GET', path: '/processes', query: new URLSearchParams(), form: {}, headers: {}, base: '' });
      expect(res.status).toBe(200);
      const row = new RegExp(`<tr data-node="${conn.node}" data-state="live" data-pid="${process.pid}">[\\s\\S]*?</tr>`).exec(res.body)?.[0];
      expect(row).toContain(`href="/queues/${q}"`);
      expect(row).toContain('2/4');
      expect(row).toMatch(/<time datetime="[^"]+" title="[^"]+">/);
      expect(res.body).toContain('id="processes-live" data-live');
      expect(res.body).toContain('href="/processes">Processes</a>');
    } finally {
      release();
      await consumer.stop(2000);
      await conn.close();
    }
    const after = mine(await admin.processes(), conn.ids.owner);
    expect(after?.info).toBeUndefined(); // the release deleted its description
    expect(await f.raw.hget(globalKeys.procs, String(conn.node))).toBeNull();
  });

  it('removes a stopped consumer from the description at the next renewal, while the process lives on', async () => {
    const q = randomQueue('proc-stop');
    const conn = new EchoMqConnection({ url: testUrl() });
    await conn.open();
    const { consumer, release } = blockingConsumer(conn, q, 2);
    const admin = new QueueAdmin(f.conn, f.queues);
    try {
      await consumer.start();
      await conn.ids.renew();
      expect(mine(await admin.processes(), conn.ids.owner)?.info?.queues).toEqual([{ name: q, concurrency: 2, active: 0 }]);
      release();
      await consumer.stop(1000);
      await conn.ids.renew();
      expect(mine(await admin.processes(), conn.ids.owner)).toMatchObject({ state: 'live', info: { queues: [] } });
    } finally {
      await conn.close();
    }
  });

  it('shows a SIGKILLed process as gone once its lease lapses, never live; a later claim prunes it', async () => {
    const q = randomQueue('proc-kill');
    const child = spawnFixture('process-child', [testUrl(), q, '1000']);
    const [, node, owner] = await child.waitForLine(/^READY (\d+) (\S+)$/, 10_000);
    const admin = new QueueAdmin(f.conn, f.queues);
    expect(mine(await admin.processes(), owner)).toMatchObject({ node: Number(node), state: 'live', info: { pid: child.pid, queues: [{ name: q, concurrency: 3, active: 0 }] } });
    child.signal('SIGKILL');
    await child.exited;
    await sleep(1100); // the lease (1 s) runs out, never renewed
    const gone = mine(await admin.processes(), owner);
    expect(gone).toMatchObject({ node: Number(node), state: 'gone', info: { pid: child.pid } });
    expect(gone?.leaseExpiresAt).toBeUndefined();
    // Any claim of the describing form prunes descriptions whose lease is over.
    const claimer = new EchoMqConnection({ url: testUrl() });
    await claimer.open();
    try {
      expect(mine(await admin.processes(), owner)).toBeUndefined();
    } finally {
      await claimer.close();
    }
  });

  it('shows planted garbage as unreadable, counted, and never fails; the CLI escapes control characters', async () => {
    const admin = new QueueAdmin(f.conn, f.queues);
    const fields = ['wbad-proc', '1099', '1022'];
    const owner = `evil-${randomQueue('o')}`;
    // 1022: a well-formed entry whose description carries an escape sequence in the host.
    await f.raw.hset(globalKeys.procs, 'wbad-proc', 'junk', '1099', `${owner} 1 {}`);
    const planted = await f.raw.hsetnx(globalKeys.procs, '1022', `${owner} 1 {"host":"a\\u001b[31mred","pid":1,"runtime":"x","version":"0","started":1}`);
    try {
      const list = await admin.processes();
      const bad = list.items.filter((p) => p.field === 'wbad-proc' || p.field === '1099');
      expect(bad.map((p) => p.state)).toEqual(['unreadable', 'unreadable']);
      expect(list.unreadable).toBeGreaterThanOrEqual(2);
      if (planted) {
        expect(mine(list, owner)).toMatchObject({ state: 'gone', info: { host: 'a\u001b[31mred' } });
        const cli = await runCli(['--url', testUrl(), 'processes']);
        expect(cli.code).toBe(0);
        expect(cli.stdout).not.toContain('\u001b');
        expect(cli.stdout).toContain('a\\x1b[31mred');
        expect(cli.stderr).toMatch(/process entr(y|ies) could not be read/);
      }
      const app = new DashboardApp({ queues: admin }, { readOnly: true, refreshMs: 0 });
      const res = await app.handle({ method: 'GET', path: '/processes', query: new URLSearchParams(), form: {}, headers: {}, base: '' });
      expect(res.status).toBe(200);
      expect(res.body).toContain('data-problem="unreadable"');
      expect(res.body).not.toContain('\u001b');
    } finally {
      await f.raw.hdel(globalKeys.procs, fields[0], fields[1]);
      if (planted) await f.raw.hdel(globalKeys.procs, '1022');
    }
  });

  it('keeps a description within 8192 bytes, cutting lists and saying so', async () => {
    const conn = new EchoMqConnection({ url: testUrl() });
    const undo = Array.from({ length: 300 }, (_, i) => conn.process.add(() => ({ kind: 'queue', queue: `a-rather-long-queue-name-${i}`, concurrency: 10, active: 0 })));
    const text = conn.process.text();
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(8192);
    const info = JSON.parse(text) as { truncated?: boolean; queues: unknown[] };
    expect(info.truncated).toBe(true);
    expect(info.queues.length).toBeGreaterThan(50);
    undo.forEach((u) => u());
    expect(JSON.parse(conn.process.text())).toMatchObject({ queues: [] });
    conn.client.disconnect();
  });

  it('ECHOMQ_VERSION is package.json version', () => {
    const pkg = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as { version: string };
    expect(ECHOMQ_VERSION).toBe(pkg.version);
  });
});
