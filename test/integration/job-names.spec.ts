/**
 * Issue 39, item 3: job names. `enqueue` takes a name (extras `n`), `job.name` and
 * `JobView.name` carry it, and a queue's `@Processor(queue, { name })` methods share one
 * consumer loop that routes by it; a name nothing takes is dead at once with EMQ_NO_HANDLER.
 */
import 'reflect-metadata';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'iovalkey';
import { EchoMqModule, InjectQueue, Processor, Queue, QueueService, type Job } from '../../src/index.js';
import { EchoMqConnection, queueKeys, wire } from '../../src/protocol.js';
import { startConsumer } from '../helpers/consumers.js';
import { runCli } from '../helpers/cli.js';
import { startDashboardApp } from '../helpers/dashboard.js';
import { refusedUnchanged } from '../helpers/refusals.js';
import { eventually, openConnection, queueKeysIn, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

let raw: Redis;
let conn: EchoMqConnection;
let queues: QueueService;
const made: string[] = [];
beforeAll(async () => {
  raw = rawClient();
  conn = await openConnection();
  queues = new QueueService(conn);
});
afterAll(async () => {
  for (const q of made) {
    const keys = await queueKeysIn(raw, q);
    if (keys.length) await raw.del(...keys);
  }
  await conn.close();
  await raw.quit();
});
const fresh = (prefix: string): string => {
  const q = randomQueue(prefix);
  made.push(q);
  return q;
};

describe('names on the wire and in the views', () => {
  it('a name rides from enqueue to job.name and JobView.name (waiting, running, done); a job without one has none', async () => {
    const q = fresh('names-rt');
    const named = await queues.enqueue(q, { a: 1 }, { name: 'charge', timeoutMs: 60_000 });
    const plain = await queues.enqueue(q, { a: 2 }); // the old form: no extras at all
    expect((await queues.getJob(q, named))?.name).toBe('charge'); // pending: read from its opts
    expect((await queues.getJob(q, plain))?.name).toBeUndefined();
    const seen = new Map<string, string | undefined>();
    const { consumer } = await startConsumer(conn, q, (job) => {
      seen.set(job.id, job.name);
      return job.name ?? 'none';
    });
    try {
      await eventually(() => seen.size === 2, 5000, 'both jobs handled');
      expect(seen.get(named)).toBe('charge');
      expect(seen.has(plain) && seen.get(plain) === undefined).toBe(true);
      await eventually(async () => (await queues.getJob(q, named))?.status === 'done', 3000, 'done');
      const done = await queues.getJob(q, named);
      expect(done).toMatchObject({ name: 'charge', result: 'charge' });
      expect((await queues.getJob(q, plain))?.name).toBeUndefined();
    } finally {
      await consumer.stop(1000);
    }
  });

  it.each([
    ['empty', ''],
    ['129 bytes', 'x'.repeat(129)],
    ['a control character', 'a\u0007b'],
    ['a newline', 'a\nb'],
    ['not a string', 42],
  ])('a bad name (%s) is refused at enqueue with EMQ_BAD_OPTION, nothing written', async (_what, name) => {
    const q = fresh('names-bad');
    await queues.enqueue(q, { warm: true }); // the queue exists: the refusal must leave it as it was
    await refusedUnchanged(raw, q, 'EMQ_BAD_OPTION', () => queues.enqueue(q, { a: 1 }, { name: name as string }));
    await refusedUnchanged(raw, q, 'EMQ_BAD_OPTION', () => queues.enqueueMany(q, [{ payload: 1, opts: { name: 'ok' } }, { payload: 2, opts: { name: name as string } }]));
  });

  it('a name of 128 bytes (multi-byte characters counted in bytes) is taken; 129 bytes of them is refused', async () => {
    const q = fresh('names-len');
    const ok = '\u00e9'.repeat(64); // 128 bytes
    const id = await queues.enqueue(q, 1, { name: ok });
    expect((await queues.getJob(q, id))?.name).toBe(ok);
    await expect(queues.enqueue(q, 1, { name: ok + 'x' })).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION' });
  });

  it('the script refuses a bad name itself (EMQ_BAD_ARG), for a peer that skips the check, writing nothing', async () => {
    const q = fresh('names-lua');
    await queues.enqueue(q, { warm: true });
    const job = (extras: string) => ({ id: conn.ids.next('job'), payload: '{}', delayMs: 0, runAtMs: 0, extras });
    for (const x of ['{"n":""}', `{"n":"${'y'.repeat(129)}"}`, '{"n":"a\\u0001b"}', '{"n":7}']) {
      await refusedUnchanged(raw, q, 'EMQ_BAD_ARG', () => wire.enqueue(conn.scriptClient, queueKeys(q), 1 << 20, [job(x)]));
    }
  });

  it('enqueueMany items carry their own names; an item-level name is refused with a hint', async () => {
    const q = fresh('names-many');
    const [a, b] = await queues.enqueueMany(q, [{ payload: 1, opts: { name: 'a' } }, { payload: 2 }]);
    expect((await queues.getJob(q, a))?.name).toBe('a');
    expect((await queues.getJob(q, b))?.name).toBeUndefined();
    await expect(queues.enqueueMany(q, [{ payload: 1, name: 'a' } as never])).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('opts: { name }') });
  });
});

describe('the CLI and the dashboard show the name', () => {
  it('echomq job prints a name row, escaped; the job page a name field, escaped', async () => {
    const q = fresh('names-view');
    const id = await queues.enqueue(q, { a: 1 }, { name: 'charge <b>&' });
    const shown = await runCli(['--url', testUrl(), 'job', q, id]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/│ name +│ charge <b>& +│/);
    const d = await startDashboardApp({ path: '/ops' });
    try {
      const page = await (await fetch(`${d.origin}/ops/queues/${q}/jobs/${id}`, { headers: { 'x-let-in': 'yes' } })).text();
      expect(page).toContain('<td data-field="name">charge &lt;b&gt;&amp;</td>');
    } finally {
      await d.app.close();
    }
  });
});

const ROUTED = randomQueue('names-routed');
const STRICT = randomQueue('names-strict');
const calls: { method: string; id: string; name?: string }[] = [];
let running = 0;
let peak = 0;

@Injectable()
class Payments {
  @Processor(ROUTED, { name: 'charge', concurrency: 2 })
  async charge(job: Job<{ n: number }>): Promise<string> {
    running++;
    peak = Math.max(peak, running);
    await new Promise((r) => setTimeout(r, 50));
    running--;
    calls.push({ method: 'charge', id: job.id, name: job.name });
    return `charged ${job.payload.n}`;
  }

  @Processor(ROUTED, { name: 'refund' })
  async refund(job: Job<{ n: number }>): Promise<string> {
    running++;
    peak = Math.max(peak, running);
    await new Promise((r) => setTimeout(r, 50));
    running--;
    calls.push({ method: 'refund', id: job.id, name: job.name });
    return `refunded ${job.payload.n}`;
  }

  @Processor(ROUTED)
  async rest(job: Job<{ n: number }>): Promise<string> {
    calls.push({ method: 'rest', id: job.id, name: job.name });
    return 'rest';
  }

  @Processor(STRICT, { name: 'only', attempts: 3 })
  async only(job: Job): Promise<string> {
    calls.push({ method: 'only', id: job.id, name: job.name });
    return 'ok';
  }
}

@Injectable()
class Producer {
  constructor(@InjectQueue(ROUTED) readonly payments: Queue<{ n: number }, string, { charge: { n: number }; refund: { n: number } }>) {}
}

describe('@Processor(queue, { name }): one loop per queue, routed by job.name', () => {
  let app: INestApplication;
  beforeAll(async () => {
    made.push(ROUTED, STRICT);
    const mod = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { url: testUrl() }, shutdownTimeoutMs: 2000 }), EchoMqModule.forFeature([{ name: ROUTED }])],
      providers: [Payments, Producer],
    }).compile();
    app = mod.createNestApplication({ logger: false });
    await app.init();
  });
  afterAll(async () => {
    await app.close();
  });

  it('each name reaches its method, every other name and no name the catch-all; the methods share one concurrency', async () => {
    const h = app.get(Producer).payments;
    const charges = await Promise.all([1, 2, 3].map((n) => h.add('charge', { n })));
    const refund = await h.add('refund', { n: 4 });
    const other = await h.enqueue({ n: 5 }, { name: 'audit' });
    const none = await h.enqueue({ n: 6 });
    const all = [...charges, refund, other, none];
    await eventually(() => all.every((id) => calls.some((c) => c.id === id)), 5000, 'every job handled');
    const by = (id: string) => calls.find((c) => c.id === id);
    for (const id of charges) expect(by(id)).toMatchObject({ method: 'charge', name: 'charge' });
    expect(by(refund)).toMatchObject({ method: 'refund', name: 'refund' });
    expect(by(other)).toMatchObject({ method: 'rest', name: 'audit' });
    expect(by(none)?.method).toBe('rest');
    expect(by(none)?.name).toBeUndefined();
    expect(peak).toBeLessThanOrEqual(2); // one loop: the queue's concurrency 2, not 2 + 1 + 1
    await eventually(async () => (await h.getJob(refund))?.status === 'done', 3000, 'refund done');
    expect(await h.getJob(refund)).toMatchObject({ name: 'refund', result: 'refunded 4' });
  });

  it('a name nothing takes (no catch-all) is dead at once with EMQ_NO_HANDLER, naming the handled names; not retried', async () => {
    const id = await app.get(QueueService).enqueue(STRICT, { x: 1 }, { name: 'unknown' });
    await eventually(async () => (await app.get(QueueService).getJob(STRICT, id))?.status === 'dead', 5000, 'dead');
    const v = await app.get(QueueService).getJob(STRICT, id);
    expect(v?.attempts).toBe(1); // attempts: 3, yet not retried
    expect(v?.error).toContain('EMQ_NO_HANDLER');
    expect(v?.error).toContain('"unknown"');
    expect(v?.error).toContain('handled names: "only"');
    const plain = await app.get(QueueService).enqueue(STRICT, { x: 2 });
    await eventually(async () => (await app.get(QueueService).getJob(STRICT, plain))?.status === 'dead', 5000, 'a nameless job is dead too');
    expect((await app.get(QueueService).getJob(STRICT, plain))?.error).toContain('a job without a name');
    expect(calls.some((c) => c.id === id || c.id === plain)).toBe(false);
  });
});

describe('the routing rule is checked at bootstrap', () => {
  const boot = async (providers: unknown[]): Promise<unknown> => {
    try {
      const mod = await Test.createTestingModule({ imports: [EchoMqModule.forRoot({ connection: { url: testUrl() } })], providers: providers as never[] }).compile();
      const app = mod.createNestApplication({ logger: false });
      await app.init();
      await app.close();
      return undefined;
    } catch (err) {
      return err;
    }
  };
  const Q1 = randomQueue('names-dup');
  const Q2 = randomQueue('names-conc');

  @Injectable()
  class SameName {
    @Processor(Q1, { name: 'a' })
    async one(): Promise<void> {}

    @Processor(Q1, { name: 'a' })
    async two(): Promise<void> {}
  }
  @Injectable()
  class Disagree {
    @Processor(Q2, { name: 'a', concurrency: 2 })
    async one(): Promise<void> {}

    @Processor(Q2, { name: 'b', concurrency: 3 })
    async two(): Promise<void> {}
  }

  it('two methods of one name are refused, naming both and the name', async () => {
    const err = await boot([SameName]);
    expect(err).toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining(`queue "${Q1}" has two consumers of job name "a", SameName.one and SameName.two`) });
  });

  it('loop options set differently by two methods of one queue are refused', async () => {
    const err = await boot([Disagree]);
    expect(err).toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('Disagree.one, Disagree.two set concurrency differently') });
  });

  it('a bad processor name is refused when the class is defined', () => {
    expect(() => Processor('q', { name: '' })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(() => Processor('q', { name: 'a\u0000' })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
  });
});
