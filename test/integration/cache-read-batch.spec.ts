import { jest } from '@jest/globals';
import type { Redis } from 'iovalkey';
import { CacheService } from '../../src/cache/cache-service.js';
import type { Coherence } from '../../src/cache/coherence/coherence.js';
import { EchoMqError } from '../../src/core/errors.js';
import { READ_BATCH_MAX } from '../../src/cache/read-batch.js';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { CacheKeys } from '../../src/core/keys.js';
import { eventually, openConnection, randomQueue, rawClient } from '../helpers/valkey.js';

let raw: Redis, writerConn: EchoMqConnection, readerConn: EchoMqConnection;
const services: CacheService[] = [];
beforeAll(async () => {
  raw = rawClient();
  [writerConn, readerConn] = await Promise.all([openConnection(), openConnection()]);
});
afterEach(() => jest.restoreAllMocks());
afterAll(async () => {
  await Promise.all(services.map((s) => s.close()));
  await Promise.all([writerConn.close(), readerConn.close(), raw.quit()]);
});

function pair(readerPollMs?: number): { writer: CacheService; reader: CacheService; k: CacheKeys } {
  const ns = randomQueue('rb');
  const writer = new CacheService(writerConn, { namespace: ns });
  const reader = new CacheService(readerConn, { namespace: ns, pollMs: readerPollMs });
  services.push(writer, reader);
  return { writer, reader, k: new CacheKeys(ns) };
}

describe('L2 reads of one turn share one cache-get call', () => {
  it('a turn of concurrent gets with a cold L1: one call for all its entries, each caller its own value, a miss its undefined', async () => {
    const { writer, reader } = pair();
    const n = READ_BATCH_MAX - 1; // written keys; one more get reads a key never written
    for (let i = 0; i < n; i++) await writer.set(`k${i}`, { i });
    await reader.get('warm'); // the reader follows the namespace: its reads need not wait
    const pipelines = jest.spyOn(readerConn.client, 'pipeline');
    const evalshas = jest.spyOn(readerConn.client, 'evalsha');
    const got = await Promise.all(Array.from({ length: n + 1 }, (_, i) => reader.get<{ i: number }>(`k${i}`)));
    expect(pipelines).not.toHaveBeenCalled();
    expect(evalshas).toHaveBeenCalledTimes(1);
    expect(evalshas.mock.calls[0][1]).toBe(2 * (n + 1)); // two keys per entry
    expect(got.slice(0, n).map((v) => v?.i)).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(got[n]).toBeUndefined(); // the last key was never written
    expect(reader.stats()).toMatchObject({ l2Hits: n, misses: 2 });
  });

  it('a failing read fails only its own caller, typed; a read after a SCRIPT FLUSH reloads (NOSCRIPT inside the batch)', async () => {
    const { writer, reader, k } = pair();
    await writer.set('good', 'g');
    await raw.set(k.entry('bad'), 'not a hash');
    await reader.get('warm');
    const [good, bad] = await Promise.allSettled([reader.get('good'), reader.get('bad')]);
    expect(good).toEqual({ status: 'fulfilled', value: 'g' });
    expect(bad.status).toBe('rejected');
    expect((bad as PromiseRejectedResult).reason).toBeInstanceOf(EchoMqError);
    expect(((bad as PromiseRejectedResult).reason as EchoMqError).code).toBe('EMQ_WRONGTYPE');
    await writer.set('again', 'a');
    await writer.set('twice', 't');
    await raw.script('FLUSH');
    await expect(Promise.all([reader.get('again'), reader.get('twice')])).resolves.toEqual(['a', 't']);
  });

  it('more reads in one turn than one call holds: split in calls of READ_BATCH_MAX entries, every caller served', async () => {
    const { writer, reader } = pair();
    for (let i = 0; i < 300; i++) await writer.set(`m${i}`, i);
    await reader.get('warm');
    const evalshas = jest.spyOn(readerConn.client, 'evalsha');
    const got = await Promise.all(Array.from({ length: 300 }, (_, i) => reader.get<number>(`m${i}`)));
    expect(got).toEqual(Array.from({ length: 300 }, (_, i) => i));
    const full = Math.floor(300 / READ_BATCH_MAX);
    expect(evalshas.mock.calls.map((c) => c[1])).toEqual([...Array<number>(full).fill(2 * READ_BATCH_MAX), 2 * (300 - full * READ_BATCH_MAX)]);
  });

  it('reads with and without the lease flag share one call, each answered for its own entry', async () => {
    const { writer, reader, k } = pair();
    await writer.set('a', 'A');
    await raw.set(k.lease('b'), 'someone', 'PX', 10_000);
    await reader.get('warm');
    const flags = jest.spyOn(readerConn.client, 'evalsha');
    // getOrLoad with a fill lease polls with the flag; a plain get reads without it.
    const l2 = (reader as unknown as { l2: { read(k: CacheKeys, key: string, lease?: boolean): Promise<{ state: string; leased: boolean }> } }).l2;
    const [a, b, c] = await Promise.all([l2.read(k, 'a'), l2.read(k, 'b', true), l2.read(k, 'c', true)]);
    expect(flags).toHaveBeenCalledTimes(1);
    expect(flags.mock.calls[0].slice(-1)).toEqual(['011']);
    expect(a).toMatchObject({ state: 'live', leased: false });
    expect(b).toEqual({ state: 'none', leased: true });
    expect(c).toEqual({ state: 'none', leased: false });
  });

  it('set sends its cache-set and its announcement in one pipeline; the other node drops on the signal and reads the new value', async () => {
    const { writer, reader, k } = pair(60_000); // no poll within the test: only the signal
    await writer.set('hot', 1);
    expect(await reader.get('hot')).toBe(1);
    await eventually(async () => Number(((await raw.call('PUBSUB', 'SHARDNUMSUB', k.signal)) as [string, number])[1]) === 2, 3000, 'both subscribed');
    const pipelines = jest.spyOn(writerConn.client, 'pipeline');
    const evalshas = jest.spyOn(writerConn.client, 'evalsha');
    await writer.set('hot', 2);
    expect(pipelines).toHaveBeenCalledTimes(1);
    expect(evalshas).not.toHaveBeenCalled(); // nothing sent outside that pipeline
    const until = Date.now() + 3000;
    let seen: unknown = 1;
    while (seen !== 2 && Date.now() < until) {
      seen = await reader.get('hot');
      await new Promise((r) => setImmediate(r));
    }
    expect(seen).toBe(2);
  });

  it('after a signal that names its keys, the re-read of a dropped key leaves before the log read that moves the position', async () => {
    // A connection of its own: the other tests' services poll their logs on the shared one.
    const own = await openConnection();
    const ns = randomQueue('rb');
    const k = new CacheKeys(ns);
    const writer = new CacheService(writerConn, { namespace: ns, pollMs: 60_000 });
    const reader = new CacheService(own, { namespace: ns, pollMs: 60_000 }); // no poll within the test: only the signal
    services.push(writer);
    try {
      await writer.set('hot', 1);
      expect(await reader.get('hot')).toBe(1);
      await eventually(async () => Number(((await raw.call('PUBSUB', 'SHARDNUMSUB', k.signal)) as [string, number])[1]) === 2, 3000, 'both subscribed');
      // The claim is about a read made in the turn the signal dropped the key (a request that
      // arrives with it): the reader's signal handler is wrapped to make one right after it runs.
      // (A loop of reads would race the signal: when the signal lands a turn before the writer's
      // reply, no read is made in its turn and the log read rightly goes first.)
      type Signalled = { signalled(ns: string, message: unknown): void };
      const coherence = (reader as unknown as { coherence: Coherence }).coherence as unknown as Signalled;
      const original = coherence.signalled.bind(coherence);
      let reread: Promise<unknown> | undefined;
      coherence.signalled = (name, message) => {
        original(name, message);
        reread ??= reader.get('hot');
      };
      const reads = jest.spyOn(own.client, 'evalsha');
      const logReads = jest.spyOn(own.client, 'multi');
      await writer.set('hot', 2);
      await eventually(async () => reread !== undefined, 3000, 'the signal reached the reader');
      expect(await reread).toBe(2);
      await eventually(async () => logReads.mock.calls.length > 0, 3000, 'the log was read');
      expect(reads).toHaveBeenCalledTimes(1); // the re-read, one cache-get call
      expect(reads.mock.invocationCallOrder[0]).toBeLessThan(logReads.mock.invocationCallOrder[0]);
    } finally {
      await reader.close();
      await own.close();
    }
  });

  it('when only the announcement fails (a log of the wrong type), set and invalidate reject typed, and the local L1 still follows L2', async () => {
    const { writer, k } = pair();
    await writer.set('x', 1);
    await raw.del(k.log);
    await raw.set(k.log, 'not a stream');
    await expect(writer.set('x', 2)).rejects.toMatchObject({ code: 'EMQ_WRONGTYPE' });
    expect(await raw.hget(k.entry('x'), 'd')).toBe('2');
    expect(writer.l1.get(k.ns, 'x')?.json).toBe('2');
    await expect(writer.invalidate('x')).rejects.toMatchObject({ code: 'EMQ_WRONGTYPE' });
    expect(await raw.hget(k.entry('x'), 'x')).toBe('1'); // the tombstone
    expect(writer.l1.get(k.ns, 'x')).toBeUndefined();
    await raw.del(k.log);
  });
});
