import 'reflect-metadata';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { EchoMqConnection } from '../../src/protocol.js';
import { EchoMqModule, Processor, QueueService, type EchoMqModuleOptions, type Job } from '../../src/index.js';
import { spawnFixture } from '../helpers/child.js';
import { ECHOMQ_EMBEDDED, type EmbeddedDefault } from '../../src/nest/embedded-default.js';
import { CapturedLogs, startApp } from '../helpers/nest.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const WORK = randomQueue('embedded');

@Injectable()
class Worker {
  @Processor(WORK)
  async run(job: Job<{ n: number }>): Promise<number> {
    return job.payload.n * 2;
  }
}

/** True while a process with this pid exists (`kill(pid, 0)` throws ESRCH once it is gone). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    expect((err as NodeJS.ErrnoException).code).toBe('ESRCH');
    return false;
  }
}

function boot(options: EchoMqModuleOptions, logs = new CapturedLogs()): Promise<INestApplication> {
  return startApp([EchoMqModule.forRoot(options)], [Worker], logs);
}

describe('the embedded default, owned by the module', () => {
  it('starts a valkey-server when no connection is given, and stops it after its connections closed', async () => {
    const logs = new CapturedLogs();
    const app = await boot({ shutdownTimeoutMs: 1000 }, logs);
    const embedded = app.get<EmbeddedDefault>(ECHOMQ_EMBEDDED);
    const conn = app.get(EchoMqConnection);
    // The order at shutdown: the connection has finished closing before the server is stopped.
    const order: string[] = [];
    const close = conn.close.bind(conn);
    conn.close = async () => {
      await close();
      order.push('connection closed');
    };
    const stop = embedded.stop;
    (embedded as { stop: () => Promise<void> }).stop = async () => {
      order.push('server stopping');
      await stop();
    };
    try {
      expect(alive(embedded.pid)).toBe(true);
      expect(conn.options.url).toBe(embedded.url);
      expect(logs.find('log', `pid ${embedded.pid}`).filter((m) => m.includes(embedded.url))).toHaveLength(1);
      const queues = app.get(QueueService);
      const id = await queues.enqueue(WORK, { n: 21 });
      await eventually(async () => (await queues.getJob(WORK, id))?.status === 'done', 5000, 'the job done');
      expect((await queues.getJob(WORK, id))?.result).toBe(42);
    } finally {
      await app.close();
    }
    expect(order).toEqual(['connection closed', 'server stopping']);
    expect(alive(embedded.pid)).toBe(false);
    expect(logs.find('log', `stopped the embedded valkey-server (pid ${embedded.pid})`)).toHaveLength(1);
    expect(logs.find('warn', '')).toEqual([]); // no reconnect or quit warnings at shutdown
  });

  it('does the same for connection: { embedded: true }, an unset URL, and producer-only apps', async () => {
    const unsetUrl = { connection: { url: process.env.ECHOMQ_UNSET_URL_FOR_TEST } };
    for (const options of [{ connection: { embedded: true } }, unsetUrl, { consumers: false }] as const) {
      const app = await boot(options);
      const { pid } = app.get<EmbeddedDefault>(ECHOMQ_EMBEDDED);
      expect(alive(pid)).toBe(true);
      await app.get(QueueService).enqueue(randomQueue('e'), {});
      await app.close();
      expect(alive(pid)).toBe(false);
    }
  });

  it('starts no server when a connection is given', async () => {
    const app = await boot({ connection: { url: process.env.ECHOMQ_TEST_URL } });
    try {
      expect(app.get(ECHOMQ_EMBEDDED)).toBeNull();
    } finally {
      await app.close();
    }
  });

  it('is refused under NODE_ENV=production, saying how to configure a connection', async () => {
    const before = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      for (const options of [{}, { connection: { embedded: true } }, { connection: { url: undefined } }] as const) {
        let err: unknown;
        try {
          EchoMqModule.forRoot(options);
        } catch (e) {
          err = e;
        }
        expect(err).toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('NODE_ENV=production') });
        expect((err as Error).message).toContain('connection: { url: process.env.ECHOMQ_URL }');
      }
      await expect(
        Test.createTestingModule({ imports: [EchoMqModule.forRootAsync({ useFactory: () => ({}) })] }).compile(),
      ).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('no connection is configured') });
    } finally {
      process.env.NODE_ENV = before;
    }
  });
});

describe('the embedded default under a signal (its own process group: Ctrl-C reaches the app only)', () => {
  it.each([['with shutdown hooks', 'hooks'], ['without shutdown hooks', 'nohooks']])(
    'SIGINT to an app %s stops the server too',
    async (_name, mode) => {
      const child = spawnFixture('embedded-child', [mode]);
      const [, pid] = await child.waitForLine(/^READY (\d+)$/);
      expect(alive(Number(pid))).toBe(true);
      child.signal('SIGINT');
      await child.exited;
      await eventually(() => !alive(Number(pid)), 5000, 'the embedded server to stop');
    },
    30_000,
  );
});

