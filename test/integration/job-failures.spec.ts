import 'reflect-metadata';
import { Injectable, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { EchoMqModule, FatalJobError, Processor, QueueService, type Job } from '../../src/index.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

const f = queueFixture();

describe('a thrown value is stored readably on the job', () => {
  const cyclic: Record<string, unknown> = { step: 'charge' };
  cyclic.self = cyclic;
  const cases: [string, unknown, string][] = [
    ['object', { code: 42 }, '{"code":42}'],
    ['nested object', { code: 'E_CARD', detail: { retry: false } }, '{"code":"E_CARD","detail":{"retry":false}}'],
    ['array', ['a', 1], '["a",1]'],
    ['cyclic object', cyclic, '{"step":"charge","self":"[Circular]"}'],
    ['string', 'card declined', 'card declined'],
    ['number', 42, '42'],
    ['undefined', undefined, 'undefined'],
    ['null', null, 'null'],
    ['Error', new TypeError('bad card'), 'TypeError: bad card'],
  ];

  it('as JSON for objects, as itself for a string, through String() otherwise (never [object Object])', async () => {
    const q = randomQueue('thrown');
    const ids = await f.queues.enqueueMany(q, cases.map((_, i) => ({ payload: { i } })));
    const { consumer } = await startConsumer(f.conn, q, (job) => {
      throw cases[(job.payload as { i: number }).i][1];
    }, { attempts: 1, concurrency: 4 });
    f.consumers.push(consumer);
    await eventually(async () => (await f.queues.counts(q)).dead === cases.length, 10_000, 'every job buried');
    for (const [i, [what, , stored]] of cases.entries()) {
      const job = await f.queues.getJob(q, ids[i]);
      expect([what, job?.status, job?.error]).toEqual([what, 'dead', stored]);
      expect(job?.error).not.toContain('[object Object]');
    }
  });
});

/** A Nest logger that records every line with its level. */
class CapturingLogger implements LoggerService {
  readonly lines: { level: string; message: string }[] = [];
  log(message: string) { this.lines.push({ level: 'log', message }); }
  warn(message: string) { this.lines.push({ level: 'warn', message }); }
  error(message: string) { this.lines.push({ level: 'error', message }); }
  /** The lines at `level` that mention `id`. */
  about(id: string, level: string): string[] {
    return this.lines.filter((l) => l.level === level && l.message.includes(id)).map((l) => l.message);
  }
}

const FAILING = randomQueue('failing');

@Injectable()
class AlwaysFails {
  @Processor(FAILING, { attempts: 3, backoff: { type: 'fixed', delayMs: 20 } })
  run(job: Job<{ fatal?: boolean; thrown?: unknown }>): never {
    if (job.payload.fatal) throw new FatalJobError('no such card');
    throw job.payload.thrown ?? new Error(`declined on attempt ${job.attempt}`);
  }
}

describe('failed and buried jobs are logged through the Nest logger', () => {
  let logger: CapturingLogger;
  let app: Awaited<ReturnType<typeof boot>>;
  async function boot() {
    const mod = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { url: testUrl() } })],
      providers: [AlwaysFails],
    }).compile();
    const a = mod.createNestApplication({ logger });
    await a.init();
    return a;
  }
  beforeAll(async () => {
    logger = new CapturingLogger();
    app = await boot();
  });
  afterAll(() => app.close());

  const settle = () => new Promise((r) => setTimeout(r, 300));
  const iso = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';

  it('warns once per failed attempt with a retry scheduled, errors once when buried', async () => {
    const queues = app.get(QueueService);
    const id = await queues.enqueue(FAILING, {});
    await eventually(async () => logger.about(id, 'error').length === 1, 10_000, 'the burial to be logged');
    await settle();
    const warns = logger.about(id, 'warn');
    expect(warns).toHaveLength(2);
    expect(warns[0]).toMatch(new RegExp(`^job ${id} of "${FAILING}" failed attempt 1/3; retry at ${iso}: Error: declined on attempt 1$`));
    expect(warns[1]).toMatch(new RegExp(`^job ${id} of "${FAILING}" failed attempt 2/3; retry at ${iso}: Error: declined on attempt 2$`));
    expect(logger.about(id, 'error')).toEqual([expect.stringMatching(new RegExp(`^job ${id} of "${FAILING}" is dead after attempt 3/3 \\(buried at ${iso}\\): Error: declined on attempt 3$`))]);
    expect((await queues.getJob(FAILING, id))?.status).toBe('dead');
  });

  it("shows the job's own attempt limit, and the stored text of a non-Error", async () => {
    const queues = app.get(QueueService);
    const id = await queues.enqueue(FAILING, { thrown: { code: 42 } }, { attempts: 2 });
    await eventually(async () => logger.about(id, 'error').length === 1, 10_000, 'the burial to be logged');
    await settle();
    expect(logger.about(id, 'warn')).toEqual([expect.stringMatching(new RegExp(`failed attempt 1/2; retry at ${iso}: \\{"code":42\\}$`))]);
    expect(logger.about(id, 'error')).toEqual([expect.stringMatching(/is dead after attempt 2\/2 \(buried at .*\): \{"code":42\}$/)]);
  });

  it('a fatal error is logged once, as an error, with no retry warning', async () => {
    const queues = app.get(QueueService);
    const id = await queues.enqueue(FAILING, { fatal: true });
    await eventually(async () => logger.about(id, 'error').length === 1, 10_000, 'the burial to be logged');
    await settle();
    expect(logger.about(id, 'warn')).toEqual([]);
    expect(logger.about(id, 'error')).toEqual([expect.stringMatching(/is dead after attempt 1\/3 \(buried at .*, fatal error\): FatalJobError: no such card$/)]);
  });
});
