import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { EchoMqModule, Processor, QueueService, type Job } from '../../src/index.js';
import { eventually, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

const SLOW = randomQueue('slow');
const KILL = randomQueue('kill');

@Injectable()
class Config {
  readonly url = testUrl();
}
@Module({ providers: [Config], exports: [Config] })
class ConfigModule {}

const started: string[] = [];
const finished: string[] = [];
const aborted: string[] = [];

@Injectable()
class SlowWorker {
  @Processor(SLOW, { concurrency: 2, leaseMs: 1000 })
  async slow(job: Job<{ ms: number }>): Promise<string> {
    started.push(job.id);
    const ok = await new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(true), job.payload.ms);
      job.signal.addEventListener('abort', () => {
        clearTimeout(t);
        resolve(false);
      });
    });
    if (!ok) {
      aborted.push(job.id);
      throw new Error('aborted');
    }
    finished.push(job.id);
    return 'ok';
  }
}

const seen = new Map<string, number>();
@Injectable()
class KillWorker {
  @Processor(KILL, { concurrency: 10, leaseMs: 1000 })
  async work(job: Job): Promise<void> {
    seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
    await new Promise((r) => setTimeout(r, 2));
  }
}

async function boot(providers: (typeof SlowWorker | typeof KillWorker)[], shutdownTimeoutMs = 5000) {
  const mod = await Test.createTestingModule({
    imports: [
      EchoMqModule.forRootAsync({
        imports: [ConfigModule],
        inject: [Config],
        useFactory: (c: Config) => ({ connection: { url: c.url }, shutdownTimeoutMs }),
      }),
    ],
    providers,
  }).compile();
  const app = mod.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('EchoMqModule.forRootAsync, shutdown and supervision', () => {
  it('lets in-flight handlers finish within the deadline on shutdown', async () => {
    const app = await boot([SlowWorker]);
    const queues = app.get(QueueService);
    const id = await queues.enqueue(SLOW, { ms: 300 });
    await eventually(() => started.includes(id), 3000, 'start');
    await app.close();
    expect(finished).toContain(id);
    const probe = await boot([], 1000);
    try {
      expect((await probe.get(QueueService).getJob(SLOW, id))?.status).toBe('done');
    } finally {
      await probe.close();
    }
  });

  it('aborts a handler past the deadline and re-delivers its job later', async () => {
    const app = await boot([SlowWorker], 200);
    const id = await app.get(QueueService).enqueue(SLOW, { ms: 60_000 });
    await eventually(() => started.includes(id), 3000, 'start');
    await app.close();
    expect(aborted).toContain(id);
    // The abandoned job was handed back (pending, its attempt given back) and runs on a new instance.
    const again = await boot([SlowWorker]);
    const queues = again.get(QueueService);
    try {
      await eventually(() => started.filter((s) => s === id).length === 2, 8000, 'redelivery');
      const job = await queues.getJob(SLOW, id);
      expect(job).toMatchObject({ status: 'active', attempts: 1 });
    } finally {
      await again.close();
    }
  });

  // A claim whose reply is lost with its connection leaves jobs leased to nobody; the lease
  // (short here) expires and any consumer's reaper re-delivers them: at-least-once, never lost.
  it('keeps consuming after its connections are killed', async () => {
    const app = await boot([KillWorker]);
    const queues = app.get(QueueService);
    const raw = rawClient();
    try {
      const ids: string[] = [];
      for (let round = 0; round < 5; round++) {
        const items = Array.from({ length: 200 }, (_, i) => ({ payload: { round, i } }));
        ids.push(...(await queues.enqueueMany(KILL, items)));
        await raw.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
        await new Promise((r) => setTimeout(r, 50));
      }
      await eventually(async () => ids.every((id) => seen.has(id)), 20_000, 'all jobs');
      await eventually(async () => (await queues.counts(KILL)).active === 0, 10_000, 'no active');
      for (const id of ids) expect((await queues.getJob(KILL, id))?.status).toBe('done');
    } finally {
      raw.disconnect();
      await app.close();
    }
  });
});
