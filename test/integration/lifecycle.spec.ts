import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { EchoMqModule, FatalJobError, Processor, QueueService, type Job, type JobStatus } from '../../src/index.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

const Q = randomQueue('life');
const R = randomQueue('retry');
const F = randomQueue('fatal');

const gates = new Map<string, () => void>();
const seenStatus = new Map<string, JobStatus | undefined>();
const release = (id: string) => gates.get(id)?.();

@Injectable()
class Handlers {
  calls: string[] = [];
  attemptsSeen: number[] = [];

  constructor(private readonly queues: QueueService) {}

  @Processor(Q, { concurrency: 2, leaseMs: 2000 })
  async work(job: Job<{ n: number }>): Promise<{ doubled: number }> {
    const status = (await this.queues.getJob(Q, job.id))?.status;
    await new Promise<void>((r) => {
      gates.set(job.id, r);
      seenStatus.set(job.id, status);
    });
    this.calls.push(job.id);
    return { doubled: job.payload.n * 2 };
  }

  @Processor(R, { attempts: 3, backoff: { type: 'fixed', delayMs: 50 } })
  async flaky(job: Job): Promise<void> {
    this.attemptsSeen.push(job.attempt);
    throw new Error(`boom ${job.attempt}`);
  }

  @Processor(F, { attempts: 5 })
  async fatal(): Promise<void> {
    throw new FatalJobError('no point retrying');
  }
}

describe('the job lifecycle through the NestJS module', () => {
  let queues: QueueService;
  let handlers: Handlers;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const mod = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { url: testUrl() } })],
      providers: [Handlers],
    }).compile();
    const app = mod.createNestApplication({ logger: false });
    await app.init();
    queues = app.get(QueueService);
    handlers = app.get(Handlers);
    close = () => app.close();
  });
  afterAll(async () => close());

  it('enqueue → @Processor → done, with getJob showing each status', async () => {
    const later = await queues.enqueue(Q, { n: 2 }, { delay: 400 });
    expect((await queues.getJob(Q, later))?.status).toBe('scheduled');

    const id = await queues.enqueue(Q, { n: 21 });
    expect(id).toMatch(/^job[0-9A-Za-z]{11}$/);
    await eventually(() => seenStatus.get(id) === 'active', 3000, 'handler start');
    const active = await queues.getJob(Q, id);
    expect(active?.status).toBe('active');
    expect(active?.attempts).toBe(1);
    release(id);
    await eventually(async () => (await queues.getJob(Q, id))?.status === 'done', 3000, 'done');
    const done = await queues.getJob<{ n: number }, { doubled: number }>(Q, id);
    expect(done?.result).toEqual({ doubled: 42 });
    expect(done?.payload).toEqual({ n: 21 });

    // the delayed job becomes pending, then runs, on the server clock
    await eventually(() => seenStatus.get(later) === 'active', 3000, 'delayed start');
    release(later);
    await eventually(async () => (await queues.getJob(Q, later))?.status === 'done', 3000, 'delayed done');
    const counts = await queues.counts(Q);
    expect(counts).toMatchObject({ done: 2, pending: 0, active: 0, scheduled: 0, dead: 0 });
  });

  it('retries with backoff, then buries after the last attempt', async () => {
    const id = await queues.enqueue(R, { x: 1 });
    await eventually(async () => (await queues.getJob(R, id))?.status === 'dead', 5000, 'morgue');
    const dead = await queues.getJob(R, id);
    expect(handlers.attemptsSeen).toEqual([1, 2, 3]);
    expect(dead?.attempts).toBe(3);
    expect(dead?.error).toContain('boom 3');
    expect((await queues.counts(R)).dead).toBe(1);
  });

  it('a per-job attempts option overrides the processor default', async () => {
    handlers.attemptsSeen = [];
    const id = await queues.enqueue(R, { x: 2 }, { attempts: 1 });
    await eventually(async () => (await queues.getJob(R, id))?.status === 'dead', 5000, 'morgue');
    expect(handlers.attemptsSeen).toEqual([1]);
  });

  it('the fatal error class goes straight to the morgue', async () => {
    const id = await queues.enqueue(F, {});
    await eventually(async () => (await queues.getJob(F, id))?.status === 'dead', 3000, 'morgue');
    const dead = await queues.getJob(F, id);
    expect(dead?.attempts).toBe(1);
    expect(dead?.error).toContain('no point retrying');
  });
});
