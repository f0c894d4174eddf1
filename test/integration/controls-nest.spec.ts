/**
 * The controls through the module (issue 11): `@Processor(q, { batch })` hands a batch handler
 * up to N jobs, `@Processor(q, { timeoutMs })` aborts a slow handler, and their option values are
 * checked when the class is defined.
 */
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { EchoMqModule, JobTimeoutError, Processor, QueueService, type BatchOutcome, type Job } from '../../src/index.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

const BATCH = randomQueue('nbatch');
const SLOW = randomQueue('nslow');
const batches: number[] = [];
const reasons: unknown[] = [];

@Injectable()
class Workers {
  @Processor(BATCH, { batch: { size: 5, maxWaitMs: 50 } })
  sum(jobs: Job<{ n: number }>[]): BatchOutcome<number>[] {
    batches.push(jobs.length);
    return jobs.map((j) => (j.payload.n < 0 ? new Error('negative') : j.payload.n * 2));
  }

  @Processor(SLOW, { timeoutMs: 100, attempts: 1 })
  slow(job: Job): Promise<never> {
    return new Promise((_, reject) => job.signal.addEventListener('abort', () => {
      reasons.push(job.signal.reason);
      reject(new Error('aborted'));
    }));
  }
}

describe('controls through @Processor', () => {
  it('batch and timeoutMs options drive the consumer', async () => {
    const mod = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { url: testUrl() }, shutdownTimeoutMs: 1000 })],
      providers: [Workers],
    }).compile();
    const app = mod.createNestApplication();
    await app.init();
    try {
      const queues = app.get(QueueService);
      const ids = await queues.enqueueMany(BATCH, [3, -1, 4, 5, 6, 7, 8].map((n) => ({ payload: { n } })));
      await eventually(async () => (await queues.counts(BATCH)).done === 6, 5000, 'six done');
      expect(Math.max(...batches)).toBeLessThanOrEqual(5);
      expect(batches.some((b) => b > 1)).toBe(true);
      expect(await queues.getJob(BATCH, ids[0])).toMatchObject({ status: 'done', result: 6 });
      expect((await queues.getJob(BATCH, ids[1]))?.error).toBe('Error: negative');
      const slow = await queues.enqueue(SLOW, {});
      await eventually(async () => (await queues.getJob(SLOW, slow))?.status === 'dead', 5000, 'timed out and buried');
      expect((await queues.getJob(SLOW, slow))?.error).toMatch(/^JobTimeoutError: /);
      expect(reasons[0]).toBeInstanceOf(JobTimeoutError);
    } finally {
      await app.close();
    }
  });

  it('refuses bad batch and timeout options when the class is defined', () => {
    for (const opts of [{ batch: { size: 1 } }, { batch: { size: 1001 } }, { batch: { size: 4, maxWaitMs: -1 } }, { batch: { size: 4, wait: 3 } }, { batch: null }, { timeoutMs: 0 }, { timeoutMs: 1.5 }]) {
      expect(() => Processor('q', opts as never)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    }
  });
});
