import 'reflect-metadata';
import type { INestApplication, LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'iovalkey';
import { QueueService } from '../../src/index.js';
import { EchoMqConnection } from '../../src/protocol.js';
import { EchoMqTestingModule, TestValkey, startEmbeddedValkey, uniqueQueueName } from '../../src/testing.js';
import { alive } from '../helpers/child.js';
import { InvoiceWorker } from '../helpers/testing-doc.handlers.js';

// ---- docs/testing.md, "Integration tests", as the page shows it (specifiers replaced by source paths) ----

describe('InvoiceWorker (integration, embedded Valkey)', () => {
  let app: INestApplication;
  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [EchoMqTestingModule.forRoot({ defaults: { backoff: { type: 'fixed', delayMs: 10 } } })],
      providers: [InvoiceWorker],
    }).compile();
    app = moduleRef.createNestApplication();
    await app.init();
  });
  afterAll(() => app.close()); // closes EchoMQ, then stops its valkey-server

  async function settled(queue: string, id: string) {
    const queues = app.get(QueueService);
    for (let i = 0; i < 250; i++) {
      const job = await queues.getJob(queue, id);
      if (job && ['done', 'dead', 'cancelled'].includes(job.status)) return job;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`job ${id} did not settle`);
  }

  it('runs a job to done', async () => {
    const id = await app.get(QueueService).enqueue('invoices', { invoice: 'A1', cents: 500 });
    expect(await settled('invoices', id)).toMatchObject({ status: 'done', result: { invoice: 'A1', charged: 500, attempt: 1 } });
  });

  it('buries a fatal failure without retrying it', async () => {
    const id = await app.get(QueueService).enqueue('invoices', { invoice: 'A2', cents: 0 });
    expect(await settled('invoices', id)).toMatchObject({ status: 'dead', attempts: 1, error: 'FatalJobError: nothing to charge' });
  });

  it('runs on its own server', () => {
    expect(app.get(TestValkey).url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
  });
});

// ---- beyond the page: the server's life, by pid ----

/** A Nest logger keeping warnings and errors. */
class Complaints implements LoggerService {
  readonly lines: string[] = [];
  log(): void {}
  warn(m: string): void {
    this.lines.push(`warn ${m}`);
  }
  error(m: string): void {
    this.lines.push(`error ${m}`);
  }
}

async function boot(options: Parameters<typeof EchoMqTestingModule.forRoot>[0] = {}, logger: LoggerService | false = false) {
  const moduleRef = await Test.createTestingModule({ imports: [EchoMqTestingModule.forRoot(options)], providers: [InvoiceWorker] }).compile();
  const app = moduleRef.createNestApplication({ logger });
  await app.init();
  return app;
}

describe('EchoMqTestingModule: one server per forRoot, stopped after the app closes', () => {
  it('starts a valkey-server at compile and leaves no process after app.close(), with nothing logged', async () => {
    const complaints = new Complaints();
    const app = await boot({}, complaints);
    const { pid, port } = app.get(TestValkey);
    expect(alive(pid)).toBe(true);
    const raw = new Redis(port, '127.0.0.1');
    expect(await raw.ping()).toBe('PONG');
    raw.disconnect();
    // The order of the two steps at shutdown, seen from outside.
    const order: string[] = [];
    const conn = app.get(EchoMqConnection);
    const closeConn = conn.close.bind(conn);
    conn.close = async () => {
      await closeConn();
      order.push('EchoMQ connections closed');
    };
    const server = app.get(TestValkey);
    const stopServer = server.stop.bind(server);
    server.stop = async () => {
      order.push(`server stopping (alive: ${alive(pid)})`);
      await stopServer();
    };
    const t0 = Date.now();
    await app.close();
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(order).toEqual(['EchoMQ connections closed', 'server stopping (alive: true)']);
    expect(alive(pid)).toBe(false);
    expect(complaints.lines).toEqual([]); // EchoMQ's connections were closed before the server went
    expect(() => app.get(TestValkey).url).toThrow(/no embedded Valkey is running/);
  });

  it('gives two apps two servers, so their keys never meet', async () => {
    const [a, b] = await Promise.all([boot(), boot()]);
    try {
      expect(a.get(TestValkey).port).not.toBe(b.get(TestValkey).port);
      const id = await a.get(QueueService).enqueue('invoices-held', { n: 1 });
      expect(await b.get(QueueService).getJob('invoices-held', id)).toBeNull();
      expect(await a.get(QueueService).getJob('invoices-held', id)).toMatchObject({ status: 'pending' });
    } finally {
      const pids = [a.get(TestValkey).pid, b.get(TestValkey).pid];
      await Promise.all([a.close(), b.close()]);
      expect(pids.map(alive)).toEqual([false, false]);
    }
  });

  it('closes from the testing module too (no app created)', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [EchoMqTestingModule.forRoot()] }).compile();
    const { pid } = moduleRef.get(TestValkey);
    expect(alive(pid)).toBe(true);
    await moduleRef.close();
    expect(alive(pid)).toBe(false);
  });

  it('runs on a given server without starting or stopping one', async () => {
    const own = await startEmbeddedValkey();
    try {
      const queue = uniqueQueueName('invoices');
      const first = await boot({ connection: { url: own.url } });
      expect(() => first.get(TestValkey).pid).toThrow(/no embedded Valkey/);
      const id = await first.get(QueueService).enqueue(queue, { n: 1 });
      await first.close();
      expect(alive(own.pid)).toBe(true);
      const second = await boot({ connection: { url: own.url } });
      try {
        expect(await second.get(QueueService).getJob(queue, id)).toMatchObject({ status: 'pending' });
      } finally {
        await second.close();
      }
    } finally {
      await own.stop();
    }
  });

  it('uniqueQueueName gives fresh names within the key grammar', () => {
    const names = new Set(Array.from({ length: 100 }, () => uniqueQueueName('orders')));
    expect(names.size).toBe(100);
    for (const n of names) expect(n).toMatch(/^orders-[0-9a-f]{10}$/);
    expect(() => uniqueQueueName('a{b')).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
  });
});
