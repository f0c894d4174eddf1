import type { Redis } from 'iovalkey';
import { QueueAdmin, QueueService, type JobCursor } from '../../src/index.js';
import { adminWire, encodeBody, queueKeys, runScript, type EchoMqConnection } from '../../src/protocol.js';
import { codeOf, refusedUnchanged as refusedUnchangedIn, sent } from '../helpers/refusals.js';
import { openConnection, randomQueue, rawClient } from '../helpers/valkey.js';
import { PROTOCOL_VERSION } from '../../src/core/scripts.js';

let raw: Redis, conn: EchoMqConnection, queues: QueueService, admin: QueueAdmin;
beforeAll(async () => {
  raw = rawClient();
  conn = await openConnection();
  queues = new QueueService(conn);
  admin = new QueueAdmin(conn, queues);
});
afterAll(async () => Promise.all([conn.close(), raw.quit()]));
const refusedUnchanged = (q: string, code: string, act: () => Promise<unknown>) => refusedUnchangedIn(raw, q, code, act);

/** A queue holding a pending, a scheduled and a dead job, so every admin script has keys to touch. */
async function seeded(): Promise<{ q: string; dead: string }> {
  const q = randomQueue('adm-bad');
  const dead = await queues.enqueue(q, { d: 1 });
  const k = queueKeys(q);
  const claimed = (await runScript(conn.scriptClient, 'claim', [k.meta, k.pending, k.scheduled, k.active, k.wake, k.data, k.opts, k.jobPrefix, k.events], [PROTOCOL_VERSION, 1, 30_000, 10])) as (string | number)[];
  await runScript(conn.scriptClient, 'retry', [k.meta, k.active, k.scheduled, k.dead, k.wake, k.data, k.jobPrefix, k.job(dead), k.events, k.cancelled, k.outbox, k.outdue], [PROTOCOL_VERSION, dead, String(claimed[3]), 'Error: x', '1', 3, 'f:50', 1000]);
  await queues.enqueue(q, { p: 1 });
  await queues.enqueue(q, { s: 1 }, { delay: 600_000 });
  return { q, dead };
}

const everyOp = (q: string, id: string): [string, () => Promise<unknown>][] => [
  ['info', () => admin.info(q)],
  ['pause', () => admin.pause(q)],
  ['resume', () => admin.resume(q)],
  ['drain', () => admin.drain(q)],
  ['jobs', () => admin.jobs(q, { status: 'dead' })],
  ['job', () => admin.job(q, id)],
  ['retry', () => admin.retry(q, id)],
  ['retryDead', () => admin.retryDead(q)],
  ['promote', () => admin.promote(q, id)],
  ['remove', () => admin.remove(q, id)],
  ['purge', () => admin.purge(q, { status: 'done', olderThanMs: 0 })],
];

describe('admin calls refuse bad input with a typed error and write nothing', () => {
  it('an unknown queue is EMQ_NOT_FOUND for every call, and no key of it appears', async () => {
    const q = randomQueue('adm-none');
    for (const [what, act] of everyOp(q, queues.mintId())) {
      expect([what, await codeOf(act)]).toEqual([what, 'EMQ_NOT_FOUND']);
    }
    expect(await raw.keys(`emq:{${q}}:*`)).toEqual([]);
  });

  it('an unknown job is EMQ_NOT_FOUND for inspect, retry, promote and remove', async () => {
    const { q } = await seeded();
    const id = queues.mintId();
    for (const act of [() => admin.job(q, id), () => admin.retry(q, id), () => admin.promote(q, id), () => admin.remove(q, id)]) {
      await refusedUnchanged(q, 'EMQ_NOT_FOUND', act);
    }
  });

  const badIds = ['jobLygHa16AHYG', 'jobzzzzzzzzzzz', 'a\tb', '', 'x'.repeat(10_000)]; // 'job123', 'evt…': business ids now
  it.each(badIds.map((id) => [id.length > 20 ? `of ${id.length} chars` : JSON.stringify(id), id]))('a bad id %s is EMQ_BAD_ID', async (_shown, id) => {
    const { q } = await seeded();
    for (const act of [() => admin.job(q, id), () => admin.retry(q, id), () => admin.promote(q, id), () => admin.remove(q, id)]) {
      await refusedUnchanged(q, 'EMQ_BAD_ID', act);
    }
  });

  it('a bad queue name is EMQ_BAD_NAME for every call', async () => {
    for (const [what, act] of everyOp('a:b{c}', queues.mintId())) expect([what, await codeOf(act)]).toEqual([what, 'EMQ_BAD_NAME']);
    expect(await codeOf(() => admin.list({ after: '' }))).toBe('EMQ_BAD_NAME'); // a position, not a name: any non-empty string (a planted entry may be one)
  });

  it('a bad cursor is EMQ_BAD_CURSOR: garbage, another status, another queue, a forged position', async () => {
    const { q } = await seeded();
    const other = (await seeded()).q;
    await queues.enqueue(q, { p: 2 });
    const page = await admin.jobs(q, { status: 'pending', limit: 1 });
    expect(page.next).toBeDefined();
    const forged = (text: string) => Buffer.from(text).toString('base64url') as JobCursor;
    const bad = ['', 'not a cursor!', 'AAAA', forged(`c1|${q}|pending|x|${queues.mintId()}`), forged(`c1|${q}|pending|1|job123`), forged(`c2|${q}|pending|1|${queues.mintId()}`)];
    for (const cursor of bad) await refusedUnchanged(q, 'EMQ_BAD_CURSOR', () => admin.jobs(q, { status: 'pending', cursor: cursor as JobCursor }));
    await refusedUnchanged(q, 'EMQ_BAD_CURSOR', () => admin.jobs(q, { status: 'done', cursor: page.next }));
    await refusedUnchanged(other, 'EMQ_BAD_CURSOR', () => admin.jobs(other, { status: 'pending', cursor: page.next }));
  });

  it('bad limits, ages and statuses are EMQ_BAD_OPTION', async () => {
    const { q } = await seeded();
    for (const limit of [0, 1001, 1.5, -1, Number.NaN]) {
      await refusedUnchanged(q, 'EMQ_BAD_OPTION', () => admin.drain(q, { limit }));
      await refusedUnchanged(q, 'EMQ_BAD_OPTION', () => admin.retryDead(q, { limit }));
      await refusedUnchanged(q, 'EMQ_BAD_OPTION', () => admin.jobs(q, { status: 'dead', limit }));
    }
    for (const olderThanMs of [-1, 1.5, 315_360_000_001]) await refusedUnchanged(q, 'EMQ_BAD_OPTION', () => admin.purge(q, { status: 'done', olderThanMs }));
    await refusedUnchanged(q, 'EMQ_BAD_OPTION', () => admin.purge(q, { status: 'pending' as 'done', olderThanMs: 0 }));
  });

  it('the scripts refuse malformed calls from another runtime (EMQ_BAD_ARG / EMQ_BAD_ID / EMQ_BAD_NAME) and write nothing', async () => {
    const { q, dead } = await seeded();
    const k = queueKeys(q);
    const c = conn.scriptClient;
    const cases: [string, string, Promise<{ keys: string[]; args: (string | number)[] }>, (s: { keys: string[]; args: (string | number)[] }) => void][] = [
      ['pause', 'EMQ_BAD_ARG', sent((x) => adminWire.pause(x, k, 'pause')), (s) => (s.args[1] = 'stop')],
      ['pause', 'EMQ_BAD_ARG', sent((x) => adminWire.pause(x, k, 'pause')), (s) => (s.keys[1] = queueKeys(randomQueue()).wake)],
      ['drain', 'EMQ_BAD_ARG', sent((x) => adminWire.drain(x, k, 5)), (s) => (s.args[1] = '0')],
      ['drain', 'EMQ_BAD_ARG', sent((x) => adminWire.drain(x, k, 5)), (s) => (s.args[1] = '1e3')],
      ['revive', 'EMQ_BAD_ARG', sent((x) => adminWire.reviveAll(x, k, 5)), (s) => (s.args[2] = '1001')],
      ['revive', 'EMQ_BAD_ID', sent((x) => adminWire.reviveOne(x, k, dead)), (s) => (s.args[2] = 'job123')],
      ['revive', 'EMQ_BAD_ARG', sent((x) => adminWire.reviveOne(x, k, dead)), (s) => (s.keys[5] = k.jobPrefix + queues.mintId())],
      ['promote', 'EMQ_BAD_ID', sent((x) => adminWire.promote(x, k, dead)), (s) => (s.args[1] = 'jobzzzzzzzzzzz')],
      ['remove', 'EMQ_BAD_ARG', sent((x) => adminWire.remove(x, k, dead)), (s) => (s.keys[8] = k.jobPrefix + queues.mintId())],
      ['purge', 'EMQ_BAD_ARG', sent((x) => adminWire.purge(x, k, 'dead', 0, 5)), (s) => (s.args[1] = 'done')],
      ['purge', 'EMQ_BAD_ARG', sent((x) => adminWire.purge(x, k, 'dead', 0, 5)), (s) => (s.args[2] = '-1')],
      ['announce', 'EMQ_BAD_NAME', sent((x) => adminWire.announce(x, 'queues', 'add', [q])), (s) => (s.args[2] = 'a:b')],
      ['announce', 'EMQ_BAD_ARG', sent((x) => adminWire.announce(x, 'queues', 'add', [q])), (s) => (s.keys[0] = '{emq}:nodes')],
    ];
    for (const [name, code, call, spoil] of cases) {
      const s = await call;
      spoil(s);
      await refusedUnchanged(q, code, () => runScript(c, name as 'pause', s.keys, s.args));
    }
  });
});
