import type { Redis } from 'iovalkey';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { queueKeys } from '../../src/core/keys.js';
import type { Consumer } from '../../src/queue/consumer/consumer.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startConsumer } from '../helpers/consumers.js';
import { eventually, openConnection, randomQueue, rawClient } from '../helpers/valkey.js';

const N = 2000;
const CHUNK = 50;

/** How many times the server ran a command (from INFO commandstats). */
async function calls(raw: Redis, command: string): Promise<number> {
  const info = await raw.info('commandstats');
  const m = new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(info);
  return m ? Number(m[1]) : 0;
}

describe('SCRIPT FLUSH under load', () => {
  let producerConn: EchoMqConnection;
  let consumerConn: EchoMqConnection;
  let raw: Redis;
  let consumer: Consumer | undefined;

  beforeAll(async () => {
    producerConn = await openConnection();
    consumerConn = await openConnection();
    raw = rawClient();
  });
  afterAll(async () => {
    await consumer?.stop(2000);
    await producerConn.close();
    await consumerConn.close();
    await raw.quit();
  });

  it('every job completes exactly once and no caller sees an error', async () => {
    const q = randomQueue('flush');
    const k = queueKeys(q);
    const queues = new QueueService(producerConn);
    const runs = new Map<string, number>();
    const started = await startConsumer(
      consumerConn,
      q,
      async (job) => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
        await new Promise((r) => setImmediate(r));
        return { i: (job.payload as { i: number }).i };
      },
      { concurrency: 20, keepDone: N * 2, leaseMs: 60_000 },
    );
    consumer = started.consumer;
    const evalsBefore = await calls(raw, 'eval');

    // A background flusher, plus one flush after every enqueue chunk, so flushes land while
    // enqueues, claims and completions are in flight.
    let flushes = 0;
    let flushing = true;
    const flushErrors: unknown[] = [];
    const background = (async () => {
      while (flushing) {
        try {
          await raw.call('SCRIPT', 'FLUSH', flushes % 2 === 0 ? 'SYNC' : 'ASYNC');
          flushes++;
        } catch (err) {
          flushErrors.push(err);
        }
        await new Promise((r) => setTimeout(r, 15));
      }
    })();

    const settled: PromiseSettledResult<string[]>[] = [];
    const flushedWithWorkLeft: number[] = [];
    const peeks: (string | undefined)[] = [];
    try {
      for (let base = 0; base < N; base += CHUNK) {
        const items = Array.from({ length: CHUNK }, (_, j) => ({ payload: { i: base + j } }));
        if ((base / CHUNK) % 2 === 0) {
          // Single enqueues issued together: auto-pipelined, each with its own NOSCRIPT fallback.
          const one = await Promise.allSettled(items.map((it) => queues.enqueue(q, it.payload).then((id) => [id])));
          settled.push(...one);
        } else {
          settled.push(...(await Promise.allSettled([queues.enqueueMany(q, items)])));
        }
        await raw.script('FLUSH');
        flushes++;
        // Reads go through a script too: the first one after a flush takes the EVAL fallback.
        const last = settled[settled.length - 1];
        if (last.status === 'fulfilled') peeks.push((await queues.getJob(q, last.value[last.value.length - 1]))?.status);
        if (base + CHUNK < N) flushedWithWorkLeft.push(base + CHUNK);
      }
      await eventually(async () => (await queues.counts(q)).done === N, 90_000, `${N} jobs to complete`);
    } finally {
      flushing = false;
      await background;
    }

    const rejected = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
    expect(rejected.map((r) => String(r.reason))).toEqual([]);
    const ids = settled.flatMap((s) => (s.status === 'fulfilled' ? s.value : []));
    expect(ids).toHaveLength(N);
    expect(new Set(ids).size).toBe(N);
    expect(flushErrors).toEqual([]);
    expect(peeks).toHaveLength(N / CHUNK);
    expect(peeks.filter((st) => st !== 'pending' && st !== 'active' && st !== 'done')).toEqual([]);
    expect(flushes).toBeGreaterThanOrEqual(N / CHUNK);
    expect(flushedWithWorkLeft.length).toBeGreaterThan(5);
    // The flushes did bite: scripts went missing and were re-sent by EVAL many times.
    expect((await calls(raw, 'eval')) - evalsBefore).toBeGreaterThanOrEqual(N / CHUNK);

    // Exactly once: every id ran once, nothing else ran.
    expect(runs.size).toBe(N);
    const twice = ids.filter((id) => runs.get(id) !== 1);
    expect(twice).toEqual([]);

    expect(await queues.counts(q)).toEqual({ scheduled: 0, pending: 0, active: 0, done: N, dead: 0, cancelled: 0, waiting: 0 });
    // Every row is done on its first attempt, with the result of its own payload.
    const pipe = raw.pipeline();
    for (const id of ids) pipe.hmget(k.job(id), 'status', 'attempts', 'result');
    const rows = ((await pipe.exec()) ?? []).map(([err, v]) => {
      if (err) throw err;
      return v as (string | null)[];
    });
    const wrong = rows
      .map(([status, attempts, result], i) => ({ id: ids[i], status, attempts, result }))
      .filter((r, i) => r.status !== 'done' || r.attempts !== '1' || r.result !== JSON.stringify({ i }));
    expect(wrong).toEqual([]);
    expect(started.log.warnings).toEqual([]);
    expect(started.log.errors).toEqual([]);
  }, 120_000);
});
