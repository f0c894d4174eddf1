/**
 * A running job's checkpoint, progress and log (issue 11): fenced by the claim token (a stale
 * holder is refused and writes nothing), bounded, shown by `getJob`; a retried attempt starts
 * with the last checkpoint. Handler timeouts abort the handler and fail the attempt.
 */
import { StaleTokenError } from '../../src/core/errors.js';
import { queueKeys } from '../../src/core/keys.js';
import { wire } from '../../src/core/wire/queue.js';
import { JobControls } from '../../src/queue/job-controls.js';
import { JobTimeoutError } from '../../src/queue/job-signals.js';
import type { Json } from '../../src/core/codec.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('checkpoint, progress and log', () => {
  const f = queueFixture();

  it('getJob shows what the handler wrote; a retried attempt starts with the last checkpoint', async () => {
    const q = randomQueue('ckpt');
    const seen: { attempt: number; checkpointed: Json | undefined }[] = [];
    const { consumer } = await startConsumer(f.conn, q, async (job) => {
      seen.push({ attempt: job.attempt, checkpointed: job.checkpointed });
      if (job.attempt === 1) {
        await job.progress({ done: 3, of: 10 });
        await job.checkpoint({ step: 3 });
        await job.log('step 1');
        await job.log('step 2');
        throw new Error('crash mid-way');
      }
      await job.progress(100);
      await job.log('resumed');
      return 'ok';
    }, { attempts: 3 });
    f.consumers.push(consumer);
    const id = await f.queues.enqueue(q, { p: 1 });
    await eventually(async () => (await f.queues.getJob(q, id))?.status === 'done', 5000, 'done');
    expect(seen).toEqual([{ attempt: 1, checkpointed: undefined }, { attempt: 2, checkpointed: { step: 3 } }]);
    expect(await f.queues.getJob(q, id)).toMatchObject({ status: 'done', progress: 100, checkpoint: { step: 3 }, logs: ['step 1', 'step 2', 'resumed'] });
  });

  it('a stale holder is refused (StaleTokenError) and writes nothing', async () => {
    const q = randomQueue('stale');
    const k = queueKeys(q);
    const id = await f.queues.enqueue(q, { p: 1 });
    const first = (await wire.claim(f.conn.scriptClient, k, 1, 50)).jobs[0];
    await sleep(120);
    expect((await wire.reap(f.conn.scriptClient, k, 100, 5, 100)).requeued).toBe(1);
    const second = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs[0];
    const c = new JobControls(f.conn, k, 1024);
    await c.checkpoint(second, { mine: true });
    const before = await f.raw.hgetall(k.job(id));
    await expect(c.checkpoint(first, { stale: true })).rejects.toBeInstanceOf(StaleTokenError);
    await expect(c.progress(first, 50)).rejects.toMatchObject({ code: 'EMQ_STALE_TOKEN' });
    await expect(c.log(first, 'late line')).rejects.toMatchObject({ code: 'EMQ_STALE_TOKEN' });
    expect(await f.raw.hgetall(k.job(id))).toEqual(before);
    expect(await f.queues.getJob(q, id)).toMatchObject({ checkpoint: { mine: true }, logs: [] });
  });

  it('bounds: the log keeps the newest 100 lines; oversized values are refused and write nothing', async () => {
    const q = randomQueue('bound');
    const k = queueKeys(q);
    const id = await f.queues.enqueue(q, { p: 1 });
    const held = (await wire.claim(f.conn.scriptClient, k, 1, 30_000)).jobs[0];
    const c = new JobControls(f.conn, k, 64);
    for (let i = 0; i < 105; i++) await c.log(held, `line ${i}`);
    const logs = (await f.queues.getJob(q, id))!.logs;
    expect(logs).toHaveLength(100);
    expect(logs[0]).toBe('line 5');
    expect(logs[99]).toBe('line 104');
    const before = await f.raw.hgetall(k.job(id));
    await expect(c.checkpoint(held, { big: 'x'.repeat(100) })).rejects.toMatchObject({ code: 'EMQ_PAYLOAD_TOO_LARGE' });
    await expect(c.progress(held, 'x'.repeat(5000))).rejects.toMatchObject({ code: 'EMQ_PAYLOAD_TOO_LARGE' });
    await expect(c.log(held, '')).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION' });
    // JSON would store NaN and Infinity as null: refused, not written as a silent null.
    for (const v of [NaN, Infinity, -Infinity, { pct: NaN }, [1, Infinity]]) {
      await expect(c.progress(held, v as number)).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('which JSON would store as null') });
      await expect(c.checkpoint(held, v as number)).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION' });
    }
    await expect(c.log(held, 'y'.repeat(4097))).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION' });
    // The script holds the same bounds for any runtime.
    await expect(wire.progress(f.conn.scriptClient, k, held, 'p', 'x'.repeat(4097), 0)).rejects.toMatchObject({ code: 'EMQ_BAD_ARG' });
    await expect(wire.progress(f.conn.scriptClient, k, held, 'l', 'x', 1001)).rejects.toMatchObject({ code: 'EMQ_BAD_ARG' });
    expect(await f.raw.hgetall(k.job(id))).toEqual(before);
  });
});

describe('handler timeouts', () => {
  const f = queueFixture();

  it('a handler past its timeout is aborted (JobTimeoutError) and its attempt fails; the retry runs', async () => {
    const q = randomQueue('tmo');
    let reason: unknown;
    const { consumer } = await startConsumer(f.conn, q, async (job) => {
      if (job.attempt === 1) {
        return new Promise((resolve) => {
          job.signal.addEventListener('abort', () => {
            reason = job.signal.reason;
            setTimeout(() => resolve('too late'), 20);
          });
        });
      }
      return 'second';
    }, { timeoutMs: 150, attempts: 3 });
    f.consumers.push(consumer);
    const id = await f.queues.enqueue(q, { p: 1 });
    await eventually(async () => (await f.queues.getJob(q, id))?.status === 'done', 5000, 'done');
    expect(reason).toBeInstanceOf(JobTimeoutError);
    expect(await f.queues.getJob(q, id)).toMatchObject({ status: 'done', result: 'second', attempts: 2, error: 'JobTimeoutError: the handler ran past its timeout of 150 ms' });
  });

  it('a timeout on the last attempt buries the job with the timeout error', async () => {
    const q = randomQueue('tmodead');
    const { consumer } = await startConsumer(f.conn, q, () => new Promise(() => undefined), { timeoutMs: 100, attempts: 1 });
    f.consumers.push(consumer);
    const id = await f.queues.enqueue(q, { p: 1 });
    await eventually(async () => (await f.queues.getJob(q, id))?.status === 'dead', 5000, 'dead');
    expect((await f.queues.getJob(q, id))?.error).toMatch(/^JobTimeoutError/);
    expect(consumer.running).toBe(0); // the slot was given back
  });
});
