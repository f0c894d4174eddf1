import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { queueKeys } from '../../src/core/keys.js';
import type { Consumer } from '../../src/queue/consumer/consumer.js';
import type { Job } from '../../src/queue/job.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startConsumer } from './consumers.js';
import { eventually } from './valkey.js';

type Payload = { kind: 'ok' | 'fail' | 'hold'; n: number };

/** Runs the whole Queue lifecycle on queues of one connection (single node or cluster). */
export interface LifecycleRunner {
  readonly queues: QueueService;
  /**
   * Enqueue (one, many, delayed, idempotent), claim by a Consumer, complete, retry to dead,
   * cancel (scheduled and active), getJob and counts on `q`; asserts every outcome. Any
   * CROSSSLOT or lost job fails it.
   */
  run(q: string): Promise<void>;
  /** Releases held handlers and stops the consumers. */
  close(): Promise<void>;
}

/** A lifecycle runner on `conn` (the caller closes the connection). */
export function lifecycleRunner(conn: EchoMqConnection): LifecycleRunner {
  const queues = new QueueService(conn);
  const consumers: Consumer[] = [];
  const gates = new Map<string, () => void>();
  const holding = new Set<string>();
  const handler = async (job: Job<unknown>): Promise<unknown> => {
    const p = job.payload as Payload;
    if (p.kind === 'fail') throw new Error(`boom ${job.attempt}`);
    if (p.kind === 'hold') {
      holding.add(job.id);
      await new Promise<void>((r) => gates.set(job.id, r));
    }
    return { doubled: p.n * 2 };
  };

  async function run(q: string): Promise<void> {
    const started = await startConsumer(conn, q, handler, { concurrency: 4, leaseMs: 1000, attempts: 2 });
    consumers.push(started.consumer);
    const statusOf = async (id: string) => (await queues.getJob(q, id))?.status;

    const one = await queues.enqueue<Payload>(q, { kind: 'ok', n: 1 });
    const many = await queues.enqueueMany<Payload>(q, [
      { payload: { kind: 'ok', n: 2 } },
      { payload: { kind: 'ok', n: 3 }, opts: { attempts: 5, backoff: { type: 'exponential', delayMs: 10 } } },
      { payload: { kind: 'ok', n: 4 }, opts: { delay: 200 } },
    ]);
    const delayed = await queues.enqueue<Payload>(q, { kind: 'ok', n: 5 }, { delay: 300 });
    const far = await queues.enqueue<Payload>(q, { kind: 'ok', n: 6 }, { delay: 3_600_000 });
    const failing = await queues.enqueue<Payload>(q, { kind: 'fail', n: 7 });
    const held = await queues.enqueue<Payload>(q, { kind: 'hold', n: 8 });
    // Idempotent enqueue with a minted id.
    const minted = queues.mintId();
    expect(await queues.enqueue<Payload>(q, { kind: 'ok', n: 9 }, { id: minted })).toBe(minted);
    expect(await queues.enqueue<Payload>(q, { kind: 'ok', n: 99 }, { id: minted })).toBe(minted);

    expect(await statusOf(far)).toBe('scheduled');
    expect(await queues.cancel(q, far)).toBe('cancelled');
    expect(await statusOf(far)).toBe('cancelled');

    const oks = [one, ...many, delayed, minted];
    await eventually(async () => {
      const s = await Promise.all([...oks, failing].map(statusOf));
      return s.every((x, i) => x === (i < oks.length ? 'done' : 'dead'));
    }, 20_000, `the jobs of ${q} to finish`);

    // The held job's lease is extended while it runs (extend through the same client), and a
    // cancel only flags it.
    await eventually(() => holding.has(held), 10_000, 'the held job to start');
    const active = queueKeys(q).active;
    const firstDeadline = Number(await conn.client.zscore(active, held));
    expect(firstDeadline).toBeGreaterThan(0);
    await eventually(async () => Number(await conn.client.zscore(active, held)) > firstDeadline, 10_000, 'the held lease to be extended');
    expect(await queues.cancel(q, held)).toBe('flagged');
    expect((await queues.getJob(q, held))?.cancelRequested).toBe(true);
    gates.get(held)?.();
    await eventually(async () => (await statusOf(held)) === 'done', 10_000, 'the held job to complete');
    expect(await queues.cancel(q, one)).toBe('finished');
    expect(await queues.cancel(q, queues.mintId())).toBe('missing');

    const done = await queues.getJob<Payload, { doubled: number }>(q, minted);
    expect(done).toMatchObject({ status: 'done', attempts: 1, payload: { kind: 'ok', n: 9 }, result: { doubled: 18 } });
    const dead = await queues.getJob(q, failing);
    expect(dead).toMatchObject({ status: 'dead', attempts: 2 });
    expect(dead?.error).toContain('boom 2');
    expect((await queues.getJob(q, held))?.attempts).toBe(1);
    expect(await queues.counts(q)).toEqual({
      scheduled: 0,
      pending: 0,
      active: 0,
      done: oks.length + 1,
      dead: 1,
      cancelled: 1,
      waiting: 0,
    });
    expect(started.log.warnings).toEqual([]);
    expect(started.log.errors).toEqual([]);
  }

  return {
    queues,
    run,
    async close() {
      for (const release of gates.values()) release();
      await Promise.all(consumers.splice(0).map((c) => c.stop(2000)));
    },
  };
}
