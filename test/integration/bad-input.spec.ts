import type { Redis } from 'iovalkey';
import { EchoMqConnection, encodeBody } from '../../src/protocol.js';
import { BUILTIN_DEFAULTS } from '../../src/unstable.js';
import { EchoMqError, QueueService } from '../../src/index.js';
import { ValkeyUnavailableError } from '../../src/core/errors.js';
import { freePort, startEmbeddedValkey } from '../../src/testing.js';
import { queueKeys, runScript, wire } from '../../src/protocol.js';
import type { EnqueueItem, EnqueueOptions } from '../../src/index.js';
import type { WireJob } from '../../src/protocol.js';
import { resolveDefaults } from '../../src/queue/queue-options.js';
import { allRefusedUnchanged, codeOf, jobId, refusedUnchanged as refusedUnchangedIn, sent, snapshot as snapshotOf, wireJob, withArgs } from '../helpers/refusals.js';
import { eventually, openConnection, queueKeysIn, randomQueue, rawClient } from '../helpers/valkey.js';

let raw: Redis, conn: EchoMqConnection, queues: QueueService, small: QueueService;
beforeAll(async () => {
  raw = rawClient();
  conn = await openConnection();
  queues = new QueueService(conn);
  small = new QueueService(conn, resolveDefaults(BUILTIN_DEFAULTS, { maxPayloadBytes: 1024 }));
});
afterAll(async () => Promise.all([conn.close(), raw.quit()]));
const snapshot = (patterns: string | string[]) => snapshotOf(raw, patterns);
const refusedUnchanged = (q: string, code: string, act: () => Promise<unknown>, pattern?: string | string[]) => refusedUnchangedIn(raw, q, code, act, pattern);

/** A queue that already holds one pending and one scheduled job, so it has every kind of key a write touches. */
async function seeded(): Promise<string> {
  const q = randomQueue('bad');
  await queues.enqueue(q, { seed: 1 });
  await queues.enqueue(q, { seed: 2 }, { delay: 600_000 });
  const k = queueKeys(q);
  expect(await queueKeysIn(raw, q)).toEqual(expect.arrayContaining([k.meta, k.pending, k.scheduled]));
  return q;
}

/**
 * enqueue ARGV (0-based): 0 version, 1 payload limit, 2 n, 3 lifecycle-log length, then per job: 4 id, 5 payload, 6 delay, 7 run-at, 8 max attempts, 9 backoff
 * (the long form: the job has its own max attempts; a plain job goes in the compact form, id and payload only).
 */
const enqueueCall = (q: string, id: string) => sent((c) => wire.enqueue(c, queueKeys(q), 1024, [wireJob(id, '{}', { maxAttempts: 3 })]));
/** The same job in the compact form: 4 id, 5 payload. */
const compactCall = (q: string, id: string) => sent((c) => wire.enqueue(c, queueKeys(q), 1024, [wireJob(id)]));
const claimCall = (q: string) => sent((c) => wire.claim(c, queueKeys(q), 1, 1000, 10));
const cancelCall = (q: string, id: string) => sent((c) => wire.cancel(c, queueKeys(q), id, 10));
const peekCall = (q: string, id: string) => sent((c) => wire.peek(c, queueKeys(q), id));

describe('malformed ids (EMQ_BAD_ID)', () => {
  // Neither a branded job id nor a business id: the branded form beyond 64 bits, empty, too long,
  // control characters. ('job123', 'evt…' and other printable strings are business ids now.)
  const bad = ['jobLygHa16AHYG', 'jobzzzzzzzzzzz', '', 'x'.repeat(201), 'a\u0000b', 'job' + encodeBody(5n) + '\n'];

  it.each(bad)('enqueue with opts.id %j, getJob and cancel of it are refused and write nothing', async (id) => {
    const q = await seeded();
    await refusedUnchanged(q, 'EMQ_BAD_ID', () => queues.enqueue(q, { a: 1 }, { id }));
    await refusedUnchanged(q, 'EMQ_BAD_ID', () => queues.getJob(q, id));
    await refusedUnchanged(q, 'EMQ_BAD_ID', () => queues.cancel(q, id));
  });

  it('getJob of an unknown id is null and cancel of it is "missing", both writing nothing', async () => {
    const [fresh, q, id] = [randomQueue('none'), await seeded(), queues.mintId()];
    const before = await snapshot(`emq:{${q}}:*`);
    for (const queue of [fresh, q]) expect([await queues.getJob(queue, id), await queues.cancel(queue, id)]).toEqual([null, 'missing']);
    expect(await queueKeysIn(raw, fresh)).toEqual([]);
    expect(await snapshot(`emq:{${q}}:*`)).toEqual(before);
  });
});

describe('hostile queue names (EMQ_BAD_NAME)', () => {
  const names = ['{', '}', 'a:b', '*', 'a\nb', '', 'x'.repeat(101), 'x'.repeat(100_000), 'a b', '?'];
  it.each(names.map((n) => [n.length > 12 ? `${n.length} chars` : JSON.stringify(n), n]))('%s is refused by every call and writes nothing', async (_shown, name) => {
    const id = queues.mintId();
    const calls: (() => Promise<unknown>)[] = [() => queues.enqueue(name, { a: 1 }), () => queues.enqueueMany(name, [{ payload: 1 }])];
    calls.push(() => queues.getJob(name, id), () => queues.cancel(name, id), () => queues.counts(name));
    await allRefusedUnchanged(raw, 'EMQ_BAD_NAME', calls, 'emq:*');
  });
});

describe('payloads', () => {
  const circular: Record<string, unknown> = {};
  circular.self = circular;
  const nonJson: [string, unknown][] = [
    ['undefined', undefined], ['a function', () => 1], ['a symbol', Symbol('x')],
    ['a BigInt', 1n], ['a nested BigInt', { n: 1n }], ['a circular object', circular],
  ];
  it.each(nonJson)('%s is refused with EMQ_BAD_PAYLOAD and writes nothing', async (_what, payload) => {
    const q = await seeded();
    await refusedUnchanged(q, 'EMQ_BAD_PAYLOAD', () => queues.enqueue(q, payload));
  });

  it('over maxPayloadBytes (counted in UTF-8 bytes) is refused with EMQ_PAYLOAD_TOO_LARGE', async () => {
    const q = await seeded();
    await refusedUnchanged(q, 'EMQ_PAYLOAD_TOO_LARGE', () => small.enqueue(q, 'a'.repeat(1023))); // 1025 bytes
    await refusedUnchanged(q, 'EMQ_PAYLOAD_TOO_LARGE', () => small.enqueue(q, '€'.repeat(400))); // 402 units, 1202 bytes
    const id = await small.enqueue(q, 'a'.repeat(1022)); // exactly 1024 bytes fits
    expect((await small.getJob(q, id))?.payload).toBe('a'.repeat(1022));
  });

  it('the script refuses an oversized payload itself (in bytes), writing nothing', async () => {
    const q = await seeded(); // JSON of 400 '€' is 402 UTF-16 units but 1202 bytes
    await refusedUnchanged(q, 'EMQ_PAYLOAD_TOO_LARGE', () => wire.enqueue(conn.scriptClient, queueKeys(q), 1024, [wireJob(jobId(1n), JSON.stringify('€'.repeat(400)))]));
  });
});

describe('batches', () => {
  it('1001 jobs in one script call are refused with EMQ_BATCH_TOO_LARGE; the service chunks them (issue 11)', async () => {
    const q = await seeded();
    const items: EnqueueItem[] = Array.from({ length: 1001 }, (_, i) => ({ payload: i }));
    const jobs = Array.from({ length: 1001 }, (_, i) => wireJob(jobId(BigInt(i + 1))));
    await refusedUnchanged(q, 'EMQ_BATCH_TOO_LARGE', () => wire.enqueue(conn.scriptClient, queueKeys(q), 1024, jobs));
    expect(await queues.enqueueMany(q, items)).toHaveLength(1001);
    expect((await queues.counts(q)).pending).toBe(1002);
  });

  it('an empty batch is refused with EMQ_BAD_OPTION', async () => {
    const q = await seeded();
    await refusedUnchanged(q, 'EMQ_BAD_OPTION', () => queues.enqueueMany(q, []));
  });

  it.each([
    ['a non-JSON payload', 'EMQ_BAD_PAYLOAD', { payload: { n: 1n } as unknown as number }],
    ['an oversized payload', 'EMQ_PAYLOAD_TOO_LARGE', { payload: 'x'.repeat(2000) }],
    ['a malformed id', 'EMQ_BAD_ID', { payload: 1, opts: { id: 'jobzzzzzzzzzzz' } }],
    ['a bad option', 'EMQ_BAD_OPTION', { payload: 1, opts: { attempts: 0 } }],
  ] as [string, string, EnqueueItem][])('only the last item has %s: none of the earlier ones is written', async (_what, code, last) => {
    const q = await seeded();
    const good: EnqueueItem[] = Array.from({ length: 20 }, (_, i) => ({ payload: { i } }));
    await refusedUnchanged(q, code, () => small.enqueueMany(q, [...good, last]));
  });

  it.each([
    ['an oversized payload', 'EMQ_PAYLOAD_TOO_LARGE', { payload: JSON.stringify('x'.repeat(2000)) }],
    ['an empty payload', 'EMQ_BAD_ARG', { payload: '' }],
    ['a negative delay', 'EMQ_BAD_ARG', { delayMs: -1 }],
    ['bad max attempts', 'EMQ_BAD_ARG', { maxAttempts: 0 }],
  ] as [string, string, Partial<WireJob>][])('straight to the script, only the last job has %s: nothing is written', async (_w, code, over) => {
    const q = await seeded();
    const jobs = Array.from({ length: 20 }, (_, i) => wireJob(jobId(BigInt(1000 + i))));
    const last = wireJob(jobId(5n), '{}', over);
    await refusedUnchanged(q, code, () => wire.enqueue(conn.scriptClient, queueKeys(q), 1024, [...jobs, last]));
  });
});

describe('bad options (EMQ_BAD_OPTION)', () => {
  const opts: [string, unknown][] = [
    ['negative delay', { delay: -1 }], ['NaN delay', { delay: Number.NaN }],
    ['infinite delay', { delay: Infinity }], ['string delay', { delay: '5' }],
    ['attempts 0', { attempts: 0 }], ['attempts 1001', { attempts: 1001 }], ['fractional attempts', { attempts: 1.5 }],
    ['unknown backoff type', { backoff: { type: 'linear', delayMs: 10 } }], ['null backoff', { backoff: null }],
    ['negative backoff delay', { backoff: { type: 'fixed', delayMs: -1 } }],
    ['backoff delay over a day', { backoff: { type: 'exponential', delayMs: 86_400_001 } }],
    ['invalid Date runAt', { runAt: new Date('nope') }], ['negative runAt', { runAt: -1 }],
    ['string runAt', { runAt: 'tomorrow' }], ['delay and runAt together', { delay: 10, runAt: Date.now() + 1000 }],
  ];
  it.each(opts)('%s is refused and writes nothing', async (_what, o) => {
    const q = await seeded();
    await refusedUnchanged(q, 'EMQ_BAD_OPTION', () => queues.enqueue(q, { a: 1 }, o as EnqueueOptions));
  });
});

describe('protocol version (EMQ_VERSION)', () => {
  it.each(['3', '1', '', '2.0', '0'])('scripts called with protocol %j refuse and write nothing', async (v) => {
    const q = randomQueue('ver');
    const enq = await enqueueCall(q, jobId(7n));
    await refusedUnchanged(q, 'EMQ_VERSION', () => runScript(conn.scriptClient, 'enqueue', enq.keys, withArgs(enq.args, { 0: v })));
    const claim = await claimCall(q);
    await refusedUnchanged(q, 'EMQ_VERSION', () => runScript(conn.scriptClient, 'claim', claim.keys, withArgs(claim.args, { 0: v })));
    expect(await queueKeysIn(raw, q)).toEqual([]);
  });

  it('a queue whose data is protocol v3 refuses v2 enqueue, claim, cancel and reap, writing nothing', async () => {
    const q = await seeded();
    const k = queueKeys(q);
    await raw.hset(k.meta, 'v', '3');
    await refusedUnchanged(q, 'EMQ_VERSION', () => queues.enqueue(q, { a: 1 }));
    await refusedUnchanged(q, 'EMQ_VERSION', () => wire.claim(conn.scriptClient, k, 10, 1000));
    const [seedId] = await raw.lrange(k.pending, 0, 0);
    await refusedUnchanged(q, 'EMQ_VERSION', () => queues.cancel(q, seedId));
    await refusedUnchanged(q, 'EMQ_VERSION', () => wire.reap(conn.scriptClient, k, 10, 3, 10));
  });
});

describe('scripts called directly with garbage ARGV', () => {
  it.each([
    ['n = -1', { 1: -1 }], ['n = 1.5', { 1: 1.5 }], ['n = 1001', { 1: 1001 }],
    ['n not a number', { 1: 'many' }], ['lease 0', { 2: 0 }], ['promote -1', { 3: -1 }],
  ] as [string, Record<number, string | number>][])('claim with %s: EMQ_BAD_ARG, nothing written', async (_w, patch) => {
    const q = await seeded();
    const { keys, args } = await claimCall(q);
    await refusedUnchanged(q, 'EMQ_BAD_ARG', () => runScript(conn.scriptClient, 'claim', keys, withArgs(args, patch)));
  });

  const id = jobId(424242n);
  it.each([
    ['a bad delay', { 6: 'soon' }], ['a negative run-at', { 7: -1 }], ['max attempts 0', { 8: '0' }],
    ['a bad backoff', { 9: 'x:1' }], ['n = 2 with one job', { 2: 2 }], ['payload limit 0', { 1: 0 }], ['an empty payload', { 5: '' }],
    ['a bad lifecycle-log length', { 3: '-1' }],
  ] as [string, Record<number, string | number>][])('enqueue with %s: EMQ_BAD_ARG, nothing written', async (_w, patch) => {
    const q = await seeded();
    const { keys, args } = await enqueueCall(q, id);
    await refusedUnchanged(q, 'EMQ_BAD_ARG', () => runScript(conn.scriptClient, 'enqueue', keys, withArgs(args, patch)));
  });

  it.each([
    ['n = 2 with one job', { 2: 2 }], ['an empty payload', { 5: '' }], ['a payload limit below the payload', { 1: 1 }],
  ] as [string, Record<number, string | number>][])('compact enqueue with %s: refused, nothing written', async (_w, patch) => {
    const q = await seeded();
    const { keys, args } = await compactCall(q, id);
    expect(args).toHaveLength(6); // the compact form: four fixed arguments, then id and payload
    const code = patch[1] === 1 ? 'EMQ_PAYLOAD_TOO_LARGE' : 'EMQ_BAD_ARG';
    await refusedUnchanged(q, code, () => runScript(conn.scriptClient, 'enqueue', keys, withArgs(args, patch)));
  });

  it('enqueue with one key too many or too few: EMQ_BAD_ARG, nothing written', async () => {
    const q = await seeded();
    const { keys, args } = await enqueueCall(q, id);
    await refusedUnchanged(q, 'EMQ_BAD_ARG', () => runScript(conn.scriptClient, 'enqueue', [...keys, queueKeys(q).job(id)], args));
    await refusedUnchanged(q, 'EMQ_BAD_ARG', () => runScript(conn.scriptClient, 'enqueue', keys.slice(0, -1), args));
  });

  it.each([
    ['the row of another id', (q: string) => queueKeys(q).job(jobId(1n))],
    ['the row of the id in another queue', () => `emq:{elsewhere}:job:${id}`],
    ['a non-row key of this queue ending in :<id>', (q: string) => `emq:{${q}}:dead:${id}`],
  ] as [string, (q: string) => string][])('cancel and peek whose row key is %s: EMQ_BAD_ARG, nothing written', async (_w, row) => {
    const q = await seeded();
    const pattern = [`emq:{${q}}:*`, 'emq:{elsewhere}:*'];
    for (const [name, call] of [['cancel', await cancelCall(q, id)], ['peek', await peekCall(q, id)]] as const) {
      const keys = call.keys.map((key) => (key === queueKeys(q).job(id) ? row(q) : key));
      await refusedUnchanged(q, 'EMQ_BAD_ARG', () => runScript(conn.scriptClient, name, keys, call.args), pattern);
    }
  });

  it.each(['job123', 'jobLygHa16AHYG', 'jobzzzzzzzzzzz', 'evt0000000000A', 'job0000000000-', 'job0000000000\n'])(
    'enqueue, cancel and peek straight to the script with id %j: EMQ_BAD_ID, nothing written',
    async (bad) => {
      const q = await seeded();
      const enq = await enqueueCall(q, id);
      await refusedUnchanged(q, 'EMQ_BAD_ID', () => runScript(conn.scriptClient, 'enqueue', enq.keys, withArgs(enq.args, { 4: bad })));
      for (const [name, call] of [['cancel', await cancelCall(q, id)], ['peek', await peekCall(q, id)]] as const) {
        const keys = call.keys.map((key) => (key === queueKeys(q).job(id) ? queueKeys(q).jobPrefix + bad : key));
        await refusedUnchanged(q, 'EMQ_BAD_ID', () => runScript(conn.scriptClient, name, keys, withArgs(call.args, { 1: bad })));
      }
    },
  );
});

describe('Valkey unavailable (EMQ_UNAVAILABLE)', () => {
  it('open() on a closed port fails with ValkeyUnavailableError within a few seconds', async () => {
    const port = await freePort();
    for (const c of [new EchoMqConnection({ host: '127.0.0.1', port, connectTimeoutMs: 1000 }), new EchoMqConnection({ url: `redis://127.0.0.1:${port}` })]) {
      const t0 = Date.now();
      const caught: unknown = await c.open().then(() => 'opened', (err: unknown) => err);
      expect(Date.now() - t0).toBeLessThan(5000);
      expect(caught).toBeInstanceOf(ValkeyUnavailableError);
      expect((caught as EchoMqError).code).toBe('EMQ_UNAVAILABLE');
      await c.close();
    }
  });

  it('when the server goes away, enqueue, getJob, counts and cancel fail with EMQ_UNAVAILABLE', async () => {
    const server = await startEmbeddedValkey();
    const c = new EchoMqConnection({ url: server.url, connectTimeoutMs: 1000, commandTimeoutMs: 2000 });
    try {
      await c.open();
      const svc = new QueueService(c);
      const q = randomQueue('gone');
      const id = await svc.enqueue(q, { a: 1 });
      // Minted while the node lease is certain: without Valkey, minting itself is refused (EMQ_NODE_LEASE).
      const later = svc.mintId();
      await server.stop();
      await eventually(() => c.client.status !== 'ready', 3000, 'disconnect noticed');
      const got = { enqueue: await codeOf(() => svc.enqueue(q, { a: 2 }, { id: later })), getJob: await codeOf(() => svc.getJob(q, id)) };
      const all = { ...got, counts: await codeOf(() => svc.counts(q)), cancel: await codeOf(() => svc.cancel(q, id)) };
      expect(all).toEqual({ enqueue: 'EMQ_UNAVAILABLE', getJob: 'EMQ_UNAVAILABLE', counts: 'EMQ_UNAVAILABLE', cancel: 'EMQ_UNAVAILABLE' });
    } finally {
      await c.close();
      await server.stop();
    }
  });
});
