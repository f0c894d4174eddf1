/**
 * QueueService.enqueue / enqueueMany / getJob at their edges: minted-id collisions, bounds of
 * delay and run-at, payloads and results another runtime wrote that are not JSON.
 */
import type { Redis } from 'iovalkey';
import { EchoMqError, QueueService } from '../../src/index.js';
import { IdMinter, queueKeys, wire } from '../../src/protocol.js';
import type { EchoMqConnection } from '../../src/protocol.js';
import type { EnqueueOptions } from '../../src/index.js';
import { codeOf, refusedUnchanged } from '../helpers/refusals.js';
import { openConnection, randomQueue, rawClient } from '../helpers/valkey.js';

let raw: Redis, conn: EchoMqConnection, queues: QueueService;
beforeAll(async () => {
  raw = rawClient();
  conn = await openConnection();
  queues = new QueueService(conn);
});
afterAll(async () => Promise.all([conn.close(), raw.quit()]));

/**
 * A QueueService whose ids come from `minter` instead of the connection's: two of them built on
 * minters with the same node number and a frozen clock mint the same ids, as two processes do
 * when they hold the same node number (a lapsed lease).
 */
function serviceMintingWith(minter: IdMinter): QueueService {
  // The node lease's surface (a lease taken as certain), minting from `minter`.
  const ids = { next: (ns: string) => minter.next(ns), node: minter.node, ready: async () => undefined };
  const c = Object.create(conn, { ids: { value: ids } }) as EchoMqConnection;
  return new QueueService(c);
}
const frozen = (node = 900): IdMinter => new IdMinter(node, () => 1_800_000_000_000);

describe('a freshly minted id that already exists (two processes on one node number)', () => {
  it('is re-minted and sent again: both jobs are added, with different ids', async () => {
    const q = randomQueue('coll');
    const [p1, p2] = [serviceMintingWith(frozen()), serviceMintingWith(frozen())];
    const a = await p1.enqueue(q, { from: 'p1' });
    const b = await p2.enqueue(q, { from: 'p2' });
    expect(b).not.toBe(a);
    expect([(await queues.getJob(q, a))?.payload, (await queues.getJob(q, b))?.payload]).toEqual([{ from: 'p1' }, { from: 'p2' }]);
    expect(await raw.llen(queueKeys(q).pending)).toBe(2);
  });

  it('in a batch, only the colliding jobs are re-minted; every returned id is a job that was added, in order', async () => {
    const q = randomQueue('coll');
    const [p1, p2] = [serviceMintingWith(frozen()), serviceMintingWith(frozen())];
    const first = await p1.enqueueMany(q, [{ payload: 'x0' }, { payload: 'x1' }]);
    const given = queues.mintId();
    const ids = await p2.enqueueMany(q, [{ payload: 'y0' }, { payload: 'y1' }, { payload: 'y2' }, { payload: 'y3', opts: { id: given } }]);
    expect(new Set([...first, ...ids]).size).toBe(6);
    expect(ids[3]).toBe(given);
    const payloads = await Promise.all(ids.map(async (id) => (await queues.getJob(q, id))?.payload));
    expect(payloads).toEqual(['y0', 'y1', 'y2', 'y3']);
  });

  it('a caller-given id that already exists is not a collision: it resolves to that id (idempotent)', async () => {
    const q = randomQueue('coll');
    const id = queues.mintId();
    expect(await queues.enqueue(q, { n: 1 }, { id })).toBe(id);
    expect(await queues.enqueue(q, { n: 2 }, { id })).toBe(id);
    expect((await queues.getJob(q, id))?.payload).toEqual({ n: 1 });
  });

  it('after 5 re-mints that all collide, fails with EMQ_ID_COLLISION instead of reporting a job that was not added', async () => {
    const q = randomQueue('coll');
    const probe = frozen();
    const taken = Array.from({ length: 6 }, () => probe.next('job'));
    for (const id of taken) await raw.hset(queueKeys(q).data, id, '"someone else"');
    await raw.hset(queueKeys(q).meta, 'v', '1');
    const err = await serviceMintingWith(frozen()).enqueue(q, { mine: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EchoMqError);
    expect((err as EchoMqError).code).toBe('EMQ_ID_COLLISION');
    expect(await raw.llen(queueKeys(q).pending)).toBe(0);
  });
});

describe('delay and run-at bounds (EMQ_BAD_OPTION, nothing written)', () => {
  const tenYears = 315_360_000_000;
  const y2200 = 7_258_118_400_000;
  it.each([
    ['delay 1e300', { delay: 1e300 }], ['delay Number.MAX_VALUE', { delay: Number.MAX_VALUE }],
    ['a delay 1 ms over 10 years', { delay: tenYears + 1 }], ['runAt after 2200-01-01', { runAt: y2200 + 1 }],
    ['runAt as a Date in 3000', { runAt: new Date('3000-01-01T00:00:00Z') }], ['runAt 1e300', { runAt: 1e300 }],
  ] as [string, EnqueueOptions][])('%s', async (_what, opts) => {
    const q = randomQueue('bound');
    await queues.enqueue(q, { seed: 1 });
    await refusedUnchanged(raw, q, 'EMQ_BAD_OPTION', () => queues.enqueue(q, { a: 1 }, opts));
  });

  it('the edges are accepted: a delay of 10 years, a runAt of 2200-01-01, a fractional runAt (rounded up)', async () => {
    const q = randomQueue('bound');
    const k = queueKeys(q);
    const ids = [await queues.enqueue(q, 1, { delay: tenYears }), await queues.enqueue(q, 2, { runAt: y2200 }), await queues.enqueue(q, 3, { runAt: y2200 - 0.5 })];
    expect(await Promise.all(ids.map((id) => raw.zscore(k.scheduled, id)))).toEqual([expect.any(String), String(y2200), String(y2200)]);
    expect(Number(await raw.zscore(k.scheduled, ids[0]))).toBeGreaterThan(Date.now() + tenYears - 60_000);
  });
});

describe('getJob of a job another runtime wrote', () => {
  it('a payload that is not JSON: the job, with payload undefined and payloadError carrying EMQ_BAD_PAYLOAD and the raw text', async () => {
    const q = randomQueue('raw');
    const id = queues.mintId();
    await raw.hset(queueKeys(q).meta, 'v', '1');
    await wire.enqueue(conn.scriptClient, queueKeys(q), 1024, [{ id, payload: 'not json {', delayMs: 0, runAtMs: 0 }]);
    const job = await queues.getJob(q, id);
    expect(job).toMatchObject({ id, status: 'pending', payload: undefined, payloadError: { code: 'EMQ_BAD_PAYLOAD', raw: 'not json {' } });
    expect(job?.payloadError?.message).toMatch(/JSON/);
    expect(job?.resultError).toBeUndefined();
  });

  it('a result that is not JSON: resultError carries it; a JSON payload still decodes', async () => {
    const q = randomQueue('raw');
    const k = queueKeys(q);
    const id = await queues.enqueue(q, { ok: 1 });
    const [j] = (await wire.claim(conn.scriptClient, k, 1, 60_000)).jobs;
    expect(await wire.complete(conn.scriptClient, k, 10, [{ id, token: j.token, result: '<xml/>' }])).toEqual([1]);
    const job = await queues.getJob(q, id);
    expect(job).toMatchObject({ status: 'done', payload: { ok: 1 }, result: undefined, resultError: { code: 'EMQ_BAD_PAYLOAD', raw: '<xml/>' } });
    expect(job?.payloadError).toBeUndefined();
  });

  it('a `__proto__` key in a payload is dropped on decode (nothing is polluted)', async () => {
    const q = randomQueue('raw');
    const id = queues.mintId();
    await raw.hset(queueKeys(q).meta, 'v', '1');
    await wire.enqueue(conn.scriptClient, queueKeys(q), 1024, [{ id, payload: '{"__proto__":{"polluted":1},"a":1}', delayMs: 0, runAtMs: 0 }]);
    const job = await queues.getJob<Record<string, unknown>>(q, id);
    expect(job?.payload).toEqual({ a: 1 });
    expect(Object.getPrototypeOf(job?.payload)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(await codeOf(async () => (await queues.getJob(q, id))?.payloadError ?? 'none')).toBe('resolved to "none"');
  });
});
