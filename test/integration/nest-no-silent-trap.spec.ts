/**
 * Issue 39, "no silent trap" on the Nest side: options a BullMQ user would write are refused at
 * bootstrap naming their path, a second consumer of one queue is refused, the precedence of the
 * option levels, `forFeatureAsync`, and `mintId()` right after bootstrap of a producer-only app.
 */
import 'reflect-metadata';
import { Injectable, Module, type INestApplication, type ModuleMetadata, type Provider } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'iovalkey';
import { CacheScope, CacheService, Cached, EchoMqModule, Flow, InjectQueue, Processor, Queue, QueueService, getQueueToken, type EchoMqModuleOptions } from '../../src/index.js';
import { EchoMqConnection } from '../../src/protocol.js';
import { startApp } from '../helpers/nest.js';
import { eventually, openConnection, queueKeysIn, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

let raw: Redis;
beforeAll(() => {
  raw = rawClient();
});
afterAll(async () => {
  await raw.quit();
});

/** Compiles and inits an app; resolves to the error its bootstrap failed with (and closes what it opened). */
async function bootError(imports: ModuleMetadata['imports'], providers: Provider[] = []): Promise<unknown> {
  let app: INestApplication | undefined;
  try {
    const mod = await Test.createTestingModule({ imports, providers }).compile();
    app = mod.createNestApplication({ logger: false });
    await app.init();
  } catch (err) {
    await app?.close().catch(() => undefined);
    return err;
  }
  await app.close();
  return undefined;
}

const url = testUrl;

describe('options BullMQ users write are refused at bootstrap, naming the path', () => {
  it('forRoot: defaults.attemps and queues.<q>.removeOnComplete (the done-when cases)', () => {
    expect(() => EchoMqModule.forRoot({ connection: { url: url() }, defaults: { attemps: 3 } } as unknown as EchoMqModuleOptions)).toThrow(
      expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('EchoMqModule options: defaults.attemps (known: attempts,') }),
    );
    expect(() => EchoMqModule.forRoot({ connection: { url: url() }, queues: { a: { removeOnComplete: true } } } as unknown as EchoMqModuleOptions)).toThrow(
      expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('EchoMqModule options: queues.a.removeOnComplete (keepDone: the done rows kept)') }),
    );
  });

  it('forRootAsync: the factory result is refused when the app starts, before anything is written', async () => {
    const q = randomQueue('trap-async');
    const err = await bootError([
      EchoMqModule.forRootAsync({ useFactory: () => ({ connection: { url: url() }, queues: { [q]: { removeOnFail: 10 } } }) as unknown as EchoMqModuleOptions }),
    ]);
    expect(err).toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining(`EchoMqModule options: queues.${q}.removeOnFail (deadCap: the morgue cap)`) });
    expect(await queueKeysIn(raw, q)).toEqual([]);
  });

  it.each([
    ['a misspelling', { attemps: 3 }, '[1].defaults.attemps (known: attempts'],
    ['BullMQ removeOnComplete', { removeOnComplete: 100 }, '[1].defaults.removeOnComplete (keepDone'],
    ['BullMQ limiter', { limiter: { max: 1, duration: 10 } }, '[1].defaults.limiter (rateLimit: { max, intervalMs })'],
    ['maxAttempts', { maxAttempts: 3 }, '[1].defaults.maxAttempts (attempts)'],
    ['BullMQ backoff shape', { backoff: { type: 'exponential', delay: 100 } }, '[1].defaults.backoff.delay (the delay is delayMs here)'],
  ])('forFeature defaults: %s', (_what, defaults, named) => {
    expect(() => EchoMqModule.forFeature([{ name: 'fine' }, { name: 'orders', defaults: defaults as never }])).toThrow(
      expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining(`unknown forFeature queue options: ${named}`) }),
    );
  });

  it.each([
    ['removeOnComplete', { removeOnComplete: true }, "removeOnComplete (the queue's keepDone)"],
    ['limiter', { limiter: { max: 1, duration: 10 } }, "limiter (the queue's rateLimit"],
    ['maxAttempts', { maxAttempts: 2 }, 'maxAttempts (attempts)'],
    ['timeout', { timeout: 5 }, 'timeout (timeoutMs)'],
    ['backoff.delay', { backoff: { type: 'fixed', delay: 5 } }, 'backoff.delay (the delay is delayMs here)'],
  ])('@Processor options: %s', (_what, opts, named) => {
    expect(() => Processor('orders', opts as never)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining(named) }));
  });

  it('cache options: ttl (seconds or ms?) is refused pointing at ttlMs, in the module, @Cached, @CacheScope and per call', async () => {
    const hint = 'ttl (ttlMs: milliseconds, always (cache-manager took seconds before v5))';
    expect(() => EchoMqModule.forRoot({ connection: { url: url() }, cache: { ttl: 60 } } as unknown as EchoMqModuleOptions)).toThrow(
      expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining(`EchoMqModule options: cache.${hint}`) }),
    );
    expect(() => Cached({ scope: 'public', ttl: 60 } as never)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining(`unknown @Cached options: ${hint}`) }));
    expect(() => CacheScope('public', { ttl: 60 } as never)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining(`unknown @CacheScope options: ${hint}`) }));
    const ns = randomQueue('trap-cache');
    const app = await startApp([EchoMqModule.forRoot({ connection: { url: url() }, consumers: false, cache: { namespace: ns } })]);
    try {
      await expect(app.get(CacheService).set('k', 1, { ttl: 60 } as never)).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining(`unknown cache entry options: ${hint}`) });
      expect(await raw.keys(`emq:{c:${ns}:*`)).toEqual([]);
    } finally {
      await app.close();
    }
  });
});

describe('enqueue options BullMQ users write are refused through the Nest handle, nothing written', () => {
  it.each([
    ['jobId', { jobId: 'order-42' }, 'jobId (de-duplicate by a business key with key, or pass a minted id (QueueService.mintId()) as id)'],
    ['removeOnComplete', { removeOnComplete: true }, "removeOnComplete (the queue's keepDone"],
    ['removeOnFail', { removeOnFail: 5 }, "removeOnFail (the queue's deadCap"],
    ['repeat', { repeat: { every: 1000 } }, 'repeat (a recurring job is a schedule'],
    ['limiter', { limiter: { max: 1, duration: 5 } }, "limiter (the queue's rateLimit"],
    ['maxAttempts', { maxAttempts: 3 }, 'maxAttempts (attempts)'],
    ['lifo', { lifo: true }, 'lifo (not offered: FIFO within a priority)'],
    ['timeout', { timeout: 100 }, 'timeout (timeoutMs)'],
    ['backoff, BullMQ shape', { backoff: { type: 'exponential', delay: 100 } }, 'backoff.delay (the delay is delayMs here)'],
  ])('%s', async (_what, opts, named) => {
    const q = randomQueue('trap-enq');
    const app = await startApp([EchoMqModule.forRoot({ connection: { url: url() }, consumers: false }), EchoMqModule.forFeature([{ name: q }])]);
    try {
      const handle = app.get<Queue<{ n: number }>>(getQueueToken(q), { strict: false });
      expect(handle).toBeInstanceOf(Queue);
      await expect(handle.enqueue({ n: 1 }, opts as never)).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining(named) });
      expect(await queueKeysIn(raw, q)).toEqual([]);
      // The EchoMQ names are accepted: attempts, delay, priority, timeoutMs.
      await handle.enqueue({ n: 2 }, { attempts: 2, delay: 10, priority: 3, timeoutMs: 50 });
      expect((await handle.counts()).scheduled).toBe(1);
    } finally {
      await app.close();
    }
  });
});

const DUP_ONE = randomQueue('dup-one');
const DUP_TWO = randomQueue('dup-two');
const DUP_FLOW = randomQueue('dup-flow');
const DUP_TWICE = randomQueue('dup-twice');

@Injectable()
class TwoInOne {
  @Processor(DUP_ONE)
  async first(): Promise<void> {}

  @Processor(DUP_ONE)
  async second(): Promise<void> {}
}
@Injectable()
class Left {
  @Processor(DUP_TWO)
  async handle(): Promise<void> {}
}
@Injectable()
class Right {
  @Processor(DUP_TWO)
  async handle(): Promise<void> {}
}
@Injectable()
class StepAndWorker {
  @Processor(DUP_FLOW)
  async work(): Promise<void> {}

  @Flow(DUP_FLOW)
  async step(): Promise<void> {}
}
@Injectable()
class Solo {
  @Processor(DUP_TWICE)
  async handle(): Promise<void> {}
}
@Module({ providers: [Solo] })
class SoloA {}
@Module({ providers: [Solo] })
class SoloB {}

describe('one consumer per queue: a second @Processor / @Flow on a queue is refused at bootstrap', () => {
  it.each([
    ['two methods of one provider', DUP_ONE, [], [TwoInOne], 'TwoInOne.first and TwoInOne.second'],
    ['two providers', DUP_TWO, [], [Left, Right], 'Left.handle and Right.handle'],
    ['a @Processor and a @Flow', DUP_FLOW, [], [StepAndWorker], 'StepAndWorker.work and StepAndWorker.step'],
    ['one provider instantiated in two modules', DUP_TWICE, [SoloA, SoloB], [], "Solo.handle and Solo.handle (Solo.handle's provider is instantiated twice"],
  ] as [string, string, ModuleMetadata['imports'], Provider[], string][])('%s', async (_what, q, imports, providers, named) => {
    const conn = await openConnection();
    try {
      const id = await new QueueService(conn).enqueue(q, { n: 1 });
      const err = await bootError([EchoMqModule.forRoot({ connection: { url: url() } }), ...(imports ?? [])], providers);
      expect(err).toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining(`queue "${q}" has two consumers`) });
      expect((err as Error).message).toContain(named);
      expect((err as Error).message).toMatch(/they would split (its|those) jobs at random/);
      await new Promise((r) => setTimeout(r, 200));
      expect((await new QueueService(conn).getJob(q, id))?.status).toBe('pending'); // no loop started
    } finally {
      await raw.del(...(await queueKeysIn(raw, q)));
      await conn.close();
    }
  });
});

const P1 = randomQueue('prec-processor');
const P2 = randomQueue('prec-feature');
const P3 = randomQueue('prec-queues');
const P4 = randomQueue('prec-defaults');
const fail = async (): Promise<never> => {
  throw new Error('always');
};

@Injectable()
class Failers {
  @Processor(P1, { attempts: 2 })
  async p1(): Promise<never> {
    return fail();
  }
  @Processor(P2)
  async p2(): Promise<never> {
    return fail();
  }
  @Processor(P3)
  async p3(): Promise<never> {
    return fail();
  }
  @Processor(P4)
  async p4(): Promise<never> {
    return fail();
  }
}

describe('precedence: enqueue option > @Processor > forFeature defaults > queues[name] > defaults', () => {
  it('the same option (attempts) set at each level: the nearest to the job wins', async () => {
    const app = await startApp(
      [
        EchoMqModule.forRoot({
          connection: { url: url() },
          defaults: { attempts: 5, backoff: { type: 'fixed', delayMs: 0 } },
          queues: { [P1]: { attempts: 4 }, [P2]: { attempts: 4 }, [P3]: { attempts: 4 } },
          shutdownTimeoutMs: 1000,
        }),
        EchoMqModule.forFeature([
          { name: P1, defaults: { attempts: 3 } },
          { name: P2, defaults: { attempts: 3 } },
        ]),
      ],
      [Failers],
    );
    try {
      const queues = app.get(QueueService);
      // The queue's settings: forFeature over queues[name] over defaults.
      expect([P1, P2, P3, P4].map((q) => queues.settings(q).attempts)).toEqual([3, 3, 4, 5]);
      const ids = await Promise.all([P1, P2, P3, P4].map((q) => queues.enqueue(q, {})));
      const own = await queues.enqueue(P1, {}, { attempts: 1 });
      const tried = async (q: string, id: string): Promise<number> => {
        await eventually(async () => (await queues.getJob(q, id))?.status === 'dead', 10_000, `${q} buried`);
        return (await queues.getJob(q, id))!.attempts;
      };
      // @Processor 2, forFeature 3, queues[name] 4, defaults 5; the job's own attempts 1 beats them all.
      expect(await Promise.all([P1, P2, P3, P4].map((q, i) => tried(q, ids[i])))).toEqual([2, 3, 4, 5]);
      expect(await tried(P1, own)).toBe(1);
    } finally {
      await app.close();
      for (const q of [P1, P2, P3, P4]) {
        const keys = await queueKeysIn(raw, q);
        if (keys.length) await raw.del(...keys);
      }
    }
  });
});

const ASYNC_Q = randomQueue('feature-async');
@Injectable()
class QueueConfig {
  readonly attempts = 6;
}
@Module({ providers: [QueueConfig], exports: [QueueConfig] })
class QueueConfigModule {}
@Injectable()
class AsyncDesk {
  constructor(@InjectQueue(ASYNC_Q) readonly jobs: Queue<{ n: number }>) {}
}

describe('forFeatureAsync', () => {
  it('takes the defaults from a factory with inject and imports; the handle is injectable', async () => {
    const app = await startApp(
      [
        EchoMqModule.forRoot({ connection: { url: url() }, consumers: false, queues: { [ASYNC_Q]: { attempts: 2, keepDone: 7 } } }),
        EchoMqModule.forFeatureAsync([
          { name: ASYNC_Q, imports: [QueueConfigModule], inject: [QueueConfig], useFactory: async (c: QueueConfig) => ({ attempts: c.attempts }) },
        ]),
      ],
      [AsyncDesk],
    );
    try {
      const { jobs } = app.get(AsyncDesk);
      expect(jobs.settings).toMatchObject({ attempts: 6, keepDone: 7 }); // merged over queues[name]
      const id = await jobs.enqueue({ n: 1 });
      expect((await jobs.getJob(id))?.payload).toEqual({ n: 1 });
    } finally {
      await app.close();
      const keys = await queueKeysIn(raw, ASYNC_Q);
      if (keys.length) await raw.del(...keys);
    }
  });

  it('refuses a factory result with an unknown key at bootstrap, naming its path; bad entries when defined', async () => {
    const q = randomQueue('feature-async-bad');
    const err = await bootError([
      EchoMqModule.forRoot({ connection: { url: url() }, consumers: false }),
      EchoMqModule.forFeatureAsync([{ name: q, useFactory: () => ({ attemps: 2 }) as never }]),
    ]);
    expect(err).toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('unknown forFeatureAsync queue options: [0].defaults.attemps (known: attempts') });
    expect(() => EchoMqModule.forFeatureAsync([{ name: q, useFactroy: () => ({}) } as never])).toThrow(
      expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('[0].useFactroy') }),
    );
    expect(() => EchoMqModule.forFeatureAsync([{ name: 'a:b', useFactory: () => ({}) }])).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    expect(await queueKeysIn(raw, q)).toEqual([]);
  });
});

describe('mintId from bootstrap on', () => {
  it('consumers: false: right after init, mintId returns an id, and enqueueing with it is idempotent', async () => {
    const q = randomQueue('mint-early');
    const app = await startApp([EchoMqModule.forRoot({ connection: { url: url() }, consumers: false })]);
    try {
      const queues = app.get(QueueService);
      const id = queues.mintId(); // the first call, before any enqueue
      expect(id).toMatch(/^job[0-9A-Za-z]+$/);
      expect(await queues.enqueue(q, { n: 1 }, { id })).toBe(id);
      expect(await queues.enqueue(q, { n: 1 }, { id })).toBe(id);
      expect((await queues.counts(q)).pending).toBe(1);
      expect(app.get(EchoMqConnection).ids.certain).toBe(true);
    } finally {
      await app.close();
      const keys = await queueKeysIn(raw, q);
      if (keys.length) await raw.del(...keys);
    }
  });

  it('with createApplicationContext too', async () => {
    @Module({ imports: [EchoMqModule.forRoot({ connection: { url: url() }, consumers: false })] })
    class ProducerApp {}
    const { NestFactory } = await import('@nestjs/core');
    const ctx = await NestFactory.createApplicationContext(ProducerApp, { logger: false });
    try {
      expect(ctx.get(QueueService).mintId()).toMatch(/^job/);
    } finally {
      await ctx.close();
    }
  });
});
