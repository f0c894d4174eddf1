/**
 * Dedup and batches (issue 11): business-key idempotency (`enqueue(q, p, { key })`),
 * `enqueueMany` of any size in bounded calls, and batch handlers settling each job on its own.
 */
import { FatalJobError } from '../../src/queue/job-signals.js';
import { queueKeys } from '../../src/core/keys.js';
import { runScript } from '../../src/core/scripts.js';
import { wire } from '../../src/core/wire/queue.js';
import { batchHandler, type BatchHandler } from '../../src/queue/batch-handler.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { BUILTIN_DEFAULTS } from '../../src/queue/queue-options.js';
import type { Job } from '../../src/queue/job.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { refusedUnchanged, sent } from '../helpers/refusals.js';
import { eventually, randomQueue } from '../helpers/valkey.js';
import { PROTOCOL_VERSION } from '../../src/core/scripts.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('business-key dedup', () => {
  const f = queueFixture();

  it('10 concurrent enqueues of one key add one job; every caller gets its id', async () => {
    const q = randomQueue('dedup');
    const ids = await Promise.all(Array.from({ length: 10 }, (_, i) => f.queues.enqueue(q, { try: i }, { key: 'order-42' })));
    expect(new Set(ids).size).toBe(1);
    expect(await f.raw.hlen(queueKeys(q).data)).toBe(1);
    expect((await f.queues.counts(q)).pending).toBe(1);
    // Ten separate services (ten producers) racing: still one job.
    const q2 = randomQueue('dedup2');
    const services = Array.from({ length: 10 }, () => new QueueService(f.conn));
    const ids2 = await Promise.all(services.map((s, i) => s.enqueue(q2, { try: i }, { key: 'evt-1' })));
    expect(new Set(ids2).size).toBe(1);
    expect(await f.raw.hlen(queueKeys(q2).data)).toBe(1);
  });

  it('a repeat after the job finished, within the window, still returns the same id; distinct keys add distinct jobs', async () => {
    const q = randomQueue('dedupdone');
    const { consumer } = await startConsumer(f.conn, q, () => 'ok');
    f.consumers.push(consumer);
    const id = await f.queues.enqueue(q, { n: 1 }, { key: 'k1' });
    await eventually(async () => (await f.queues.getJob(q, id))?.status === 'done', 3000, 'done');
    expect(await f.queues.enqueue(q, { n: 2 }, { key: 'k1' })).toBe(id);
    const other = await f.queues.enqueue(q, { n: 3 }, { key: 'k2' });
    expect(other).not.toBe(id);
    const pttl = await f.raw.pttl(queueKeys(q).dedup('k1'));
    expect(pttl).toBeGreaterThan(BUILTIN_DEFAULTS.dedupWindowMs - 60_000);
  });

  it('after the window the key is free again', async () => {
    const q = randomQueue('dedupwin');
    const short = new QueueService(f.conn, BUILTIN_DEFAULTS, { [q]: { dedupWindowMs: 100 } });
    const a = await short.enqueue(q, { n: 1 }, { key: 'w' });
    expect(await short.enqueue(q, { n: 2 }, { key: 'w' })).toBe(a);
    await sleep(200);
    expect(await short.enqueue(q, { n: 3 }, { key: 'w' })).not.toBe(a);
  });

  it('enqueueMany with keys: repeats inside one call resolve to the first job of the key', async () => {
    const q = randomQueue('dedupmany');
    const ids = await f.queues.enqueueMany(q, ['a', 'b', 'a', 'c', 'b'].map((key, i) => ({ payload: i, opts: { key } })));
    expect(ids[2]).toBe(ids[0]);
    expect(ids[4]).toBe(ids[1]);
    expect(new Set(ids).size).toBe(3);
    expect(await f.raw.hlen(queueKeys(q).data)).toBe(3);
  });

  it('bad keys are refused with typed errors and write nothing', async () => {
    const q = randomQueue('dedupbad');
    await f.queues.enqueue(q, 1); // the queue exists
    for (const key of ['', 'x'.repeat(257), 'tab\there', 'nl\n', 'del\x7f']) {
      await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () => f.queues.enqueue(q, 1, { key }));
    }
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () => f.queues.enqueue(q, 1, { key: 7 as unknown as string }));
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () => f.queues.enqueueMany(q, [{ payload: 1, opts: { key: 'a' } }, { payload: 2 }]));
    // The script refuses the same for any runtime: a bad key, a key of another prefix, a bad window.
    const k = queueKeys(q);
    const call = await sent((c) => wire.enqueue(c, k, 1024, [{ id: f.queues.mintId(), payload: '1', delayMs: 0, runAtMs: 0, dedupKey: k.dedup('ok') }], '', 1000));
    const keys = [...call.keys];
    const run = (ks: string[], args: (string | number)[]) => () => runScript(f.conn.scriptClient, 'enqueue', ks, args);
    const id = f.queues.mintId();
    const args = [PROTOCOL_VERSION, 1024, 1, '', id, '1', 0, 0, '', ''];
    for (const bad of [k.dedup('ok').slice(0, -2) + '\x01', `emq:{${q}}:key:`, `emq:{${q}}:kex:ok`, `emq:{${q}}:key:${'y'.repeat(257)}`]) {
      await refusedUnchanged(f.raw, q, 'EMQ_BAD_ARG', run([...keys.slice(0, 7), bad], [...args, 1000]));
    }
    for (const w of [0, '1.5', 2_592_000_001, '']) await refusedUnchanged(f.raw, q, 'EMQ_BAD_ARG', run(keys, [...args, w]));
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_ARG', run(keys, args)); // keyed without the window
  });
});

describe('enqueueMany of any size', () => {
  const f = queueFixture();

  it('2500 items go in bounded calls (at most 1000 jobs each) and the ids come back in order', async () => {
    const q = randomQueue('chunks');
    const sizes: number[] = [];
    const original = wire.enqueue;
    wire.enqueue = (c, k, m, jobs, e, w) => {
      if (k.queue === q) sizes.push(jobs.length);
      return original(c, k, m, jobs, e, w);
    };
    try {
      const ids = await f.queues.enqueueMany(q, Array.from({ length: 2500 }, (_, i) => ({ payload: { i } })));
      expect(ids).toHaveLength(2500);
      expect(new Set(ids).size).toBe(2500);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(1000);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(2500);
      // FIFO: pending holds the ids in the order given (LPUSH at the head, claim from the tail).
      const pending = await f.raw.lrange(queueKeys(q).pending, 0, -1);
      expect(pending.reverse()).toEqual(ids);
      const j = await f.queues.getJob(q, ids[1700]);
      expect(j?.payload).toEqual({ i: 1700 });
    } finally {
      wire.enqueue = original;
    }
  });
});

describe('batch handlers', () => {
  const f = queueFixture();

  it('receive up to N jobs at once and settle each on its own outcome', async () => {
    const q = randomQueue('batch');
    const sizes: number[] = [];
    const fn: BatchHandler<unknown, unknown> = (jobs: Job<unknown>[]) => {
      sizes.push(jobs.length);
      return jobs.map((j) => {
        const n = (j.payload as { n: number }).n;
        if (n === 3) return new FatalJobError('bad item');
        return n * 10;
      });
    };
    const { consumer } = await startConsumer(f.conn, q, batchHandler(fn, { size: 4, maxWaitMs: 100 }), { concurrency: 4, prefetch: 0 });
    f.consumers.push(consumer);
    const ids = await f.queues.enqueueMany(q, Array.from({ length: 10 }, (_, n) => ({ payload: { n } })));
    await eventually(async () => (await f.queues.counts(q)).done === 9, 5000, 'nine done');
    expect(Math.max(...sizes)).toBeLessThanOrEqual(4);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(10);
    expect(sizes.some((s) => s > 1)).toBe(true);
    expect(await f.queues.getJob(q, ids[5])).toMatchObject({ status: 'done', result: 50 });
    expect(await f.queues.getJob(q, ids[3])).toMatchObject({ status: 'dead', error: 'FatalJobError: bad item' });
  });

  it('a throw fails every job of the batch; a partial batch is handed over after maxWaitMs', async () => {
    const q = randomQueue('batchthrow');
    let calls = 0;
    const fn: BatchHandler<unknown, unknown> = (jobs) => {
      calls++;
      if (calls === 1) throw new Error(`batch of ${jobs.length} failed`);
      return undefined;
    };
    const { consumer } = await startConsumer(f.conn, q, batchHandler(fn, { size: 10, maxWaitMs: 30 }), { concurrency: 10, attempts: 3 });
    f.consumers.push(consumer);
    const ids = await f.queues.enqueueMany(q, [{ payload: 1 }, { payload: 2 }]);
    await eventually(async () => (await f.queues.counts(q)).done === 2, 5000, 'both done on the retry');
    const j = await f.queues.getJob(q, ids[0]);
    expect(j).toMatchObject({ status: 'done', attempts: 2, error: 'Error: batch of 2 failed' });
  });
});
