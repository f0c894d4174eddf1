/**
 * Per-job timeouts (issue 11): `enqueue(q, p, { timeoutMs })` rides in the job's extras
 * (docs/protocol.md §3), comes back with every claim, aborts the handler and fails the attempt;
 * with a processor timeout too, the shorter wins. Bad values are refused, nothing written.
 */
import { InvalidOptionError } from '../../src/core/errors.js';
import { queueKeys } from '../../src/core/keys.js';
import { wire } from '../../src/core/wire/queue.js';
import { JobTimeoutError } from '../../src/queue/job-signals.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

describe('per-job timeouts', () => {
  const f = queueFixture();

  it("a job's own timeout aborts its handler (JobTimeoutError) and fails the attempt; the retry runs under it again", async () => {
    const q = randomQueue('jtmo');
    const reasons: unknown[] = [];
    const { consumer } = await startConsumer(f.conn, q, async (job) => {
      if (job.attempt < 3) {
        return new Promise((resolve) => {
          job.signal.addEventListener('abort', () => {
            reasons.push(job.signal.reason);
            resolve('too late');
          });
        });
      }
      return 'third';
    }, { attempts: 3, concurrency: 2 });
    f.consumers.push(consumer);
    const started = Date.now();
    const id = await f.queues.enqueue(q, { p: 1 }, { timeoutMs: 120 });
    const plain = await f.queues.enqueue(q, { p: 2 });
    await eventually(async () => (await f.queues.getJob(q, id))?.status === 'done', 5000, 'done');
    expect(Date.now() - started).toBeGreaterThanOrEqual(240); // two attempts ran into their 120 ms
    expect(reasons).toHaveLength(2);
    for (const r of reasons) expect(r).toMatchObject({ name: 'JobTimeoutError', timeoutMs: 120 });
    expect(reasons[0]).toBeInstanceOf(JobTimeoutError);
    expect(await f.queues.getJob(q, id)).toMatchObject({ status: 'done', result: 'third', attempts: 3, error: 'JobTimeoutError: the handler ran past its timeout of 120 ms' });
    // The plain job of the same queue has no timeout: it waits on its signal, which never aborts.
    expect(await f.queues.getJob(q, plain)).toMatchObject({ status: 'active', attempts: 1 });
  });

  it("the job's timeout beats the processor's when shorter, and the processor's applies when the job's is longer", async () => {
    const q = randomQueue('jtmo2');
    const seen = new Map<string, number>();
    const { consumer } = await startConsumer(f.conn, q, (job) => new Promise((resolve) => {
      job.signal.addEventListener('abort', () => {
        seen.set(job.id, (job.signal.reason as JobTimeoutError).timeoutMs);
        resolve(null);
      });
    }), { timeoutMs: 400, attempts: 1, concurrency: 3 });
    f.consumers.push(consumer);
    const short = await f.queues.enqueue(q, {}, { timeoutMs: 50 });
    const long = await f.queues.enqueue(q, {}, { timeoutMs: 60_000 });
    const none = await f.queues.enqueue(q, {});
    await eventually(async () => seen.size === 3, 5000, 'three timeouts');
    expect(Object.fromEntries(seen)).toEqual({ [short]: 50, [long]: 400, [none]: 400 });
    for (const id of [short, long, none]) expect((await f.queues.getJob(q, id))?.status).toBe('dead');
  });

  it('a claim returns the extras; bad timeouts are refused with InvalidOptionError and nothing is written', async () => {
    const q = randomQueue('jtmobad');
    const k = queueKeys(q);
    for (const t of [0, -1, 1.5, 86_400_001, Number.NaN, '5' as unknown as number]) {
      await expect(f.queues.enqueue(q, {}, { timeoutMs: t })).rejects.toBeInstanceOf(InvalidOptionError);
      await expect(f.queues.enqueueMany(q, [{ payload: {} }, { payload: {}, opts: { timeoutMs: t } }])).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION' });
    }
    expect(await f.raw.keys(`emq:{${q}}:*`)).toEqual([]);
    const id = await f.queues.enqueue(q, { a: 1 }, { timeoutMs: 86_400_000, priority: 3 });
    const claimed = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs[0];
    expect(claimed).toMatchObject({ id, extras: '{"t":86400000}' });
  });
});
