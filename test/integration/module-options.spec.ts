import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { EchoMqConnection } from '../../src/protocol.js';
import { EchoMqModule, InjectQueue, Queue, QueueService, type EchoMqModuleOptions, type EchoMqOptionsFactory } from '../../src/index.js';
import { freePort, startEmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { startApp } from '../helpers/nest.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

@Injectable()
class Config {
  readonly url = testUrl();
}
@Module({ providers: [Config], exports: [Config] })
class ConfigModule {}

/** An options factory class, for `useClass` (it injects `Config` from `imports`) and `useExisting`. */
@Injectable()
class EchoMqConfig implements EchoMqOptionsFactory {
  constructor(private readonly config: Config) {}
  createEchoMqOptions(): EchoMqModuleOptions {
    return { connection: { url: this.config.url }, defaults: { attempts: 7 } };
  }
}
@Module({ imports: [ConfigModule], providers: [EchoMqConfig], exports: [EchoMqConfig] })
class EchoMqConfigModule {}

/** The options reached the module (attempts 7) and the connection works (an enqueue lands). */
async function expectWorking(app: INestApplication): Promise<void> {
  const queues = app.get(QueueService);
  const q = randomQueue('async');
  expect(queues.settings(q).attempts).toBe(7);
  const id = await queues.enqueue(q, { ok: true });
  expect((await queues.getJob(q, id))?.status).toBe('pending');
}

describe('EchoMqModule options', () => {
  it.each([
    [
      'useFactory (and inject)',
      EchoMqModule.forRootAsync({
        imports: [ConfigModule],
        inject: [Config],
        useFactory: async (c: Config) => ({ connection: { url: c.url }, defaults: { attempts: 7 } }),
      }),
    ],
    ['useClass (instantiated by the module, its dependencies from imports)', EchoMqModule.forRootAsync({ imports: [ConfigModule], useClass: EchoMqConfig })],
    ['useExisting (a provider of an imported module)', EchoMqModule.forRootAsync({ imports: [EchoMqConfigModule], useExisting: EchoMqConfig })],
  ])('forRootAsync with %s', async (_style, root) => {
    const app = await startApp([root]);
    try {
      await expectWorking(app);
    } finally {
      await app.close();
    }
  });

  it('refuses unknown and bad options with EMQ_BAD_OPTION before any I/O', async () => {
    const url = testUrl();
    const bad: [unknown, string][] = [
      [{ conection: { url } }, 'conection'],
      [{ connection: { url, hots: 'x' } }, 'hots'],
      [{ connection: { embedded: true, port: 1 } }, 'port'],
      [{ connection: { url }, bus: { instanse: 'a' } }, 'instanse'],
      [{ connection: { url }, cache: { ttl: 5 } }, 'ttl'],
      [{ connection: { url }, flows: { relays: false } }, 'relays'],
      [{ connection: { url }, telemetry: { traces: false } }, 'traces'],
      [{ connection: { url }, telemetry: { tracing: 'off' } }, 'telemetry.tracing'],
      [{ connection: { url }, telemetry: true }, 'telemetry'],
      [{ connection: { url }, shutdownTimeoutMs: -1 }, 'shutdownTimeoutMs'],
      [{ connection: { url }, consumers: 'no' }, 'consumers'],
      [{ connection: { url }, defaults: { attempts: 0 } }, 'attempts'],
      [{ connection: { url: '' } }, 'connection.url'], // ECHOMQ_URL= (set, empty) is not "no connection"
      [{ connection: { url: 'http://127.0.0.1:6379' } }, 'connection.url'],
    ];
    for (const [options, named] of bad) {
      let err: unknown;
      try {
        EchoMqModule.forRoot(options as EchoMqModuleOptions);
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ code: 'EMQ_BAD_OPTION' });
      expect((err as Error).message).toContain(named);
    }
    expect(() => EchoMqModule.forRoot({ connection: { url }, queues: { 'bad name': {} } })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    // forRootAsync: the resolved options are validated the same way (the app does not start).
    await expect(
      Test.createTestingModule({ imports: [EchoMqModule.forRootAsync({ useFactory: () => ({ connection: { url }, conection: {} }) as EchoMqModuleOptions })] }).compile(),
    ).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('conection') });
    // Exactly one of useFactory / useClass / useExisting.
    expect(() => EchoMqModule.forRootAsync({})).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(() => EchoMqModule.forRootAsync({ useClass: EchoMqConfig, useExisting: EchoMqConfig })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
  });
});

const LAZY = randomQueue('lazy');
@Injectable()
class Producer {
  constructor(@InjectQueue(LAZY) readonly jobs: Queue<{ n: number }>) {}
}

describe('consumers: false (a producer-only app)', () => {
  it('starts without Valkey reachable, then enqueues once it is', async () => {
    const port = await freePort();
    const app = await startApp(
      [EchoMqModule.forRoot({ connection: { url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 1000 }, consumers: false }), EchoMqModule.forFeature([{ name: LAZY }])],
      [Producer],
    );
    const server = { stop: async () => undefined, pid: 0 };
    try {
      const { jobs } = app.get(Producer);
      // Nothing listens yet: the first use fails with a typed error, and the app keeps running.
      await expect(jobs.enqueue({ n: 1 })).rejects.toMatchObject({ code: 'EMQ_UNAVAILABLE' });
      Object.assign(server, await startEmbeddedValkey({ port }));
      const id = await jobs.enqueue({ n: 2 });
      expect((await jobs.getJob(id))?.payload).toEqual({ n: 2 });
      expect((await jobs.counts()).pending).toBe(1);
      expect(app.get(EchoMqConnection).ids.certain).toBe(true);
    } finally {
      await app.close();
      await server.stop();
    }
  });

  it('opens at startup when Valkey is reachable (mintId works at once), and closes cleanly when never used', async () => {
    const server = await startEmbeddedValkey();
    try {
      const app = await startApp([EchoMqModule.forRoot({ connection: { url: server.url }, consumers: false }), EchoMqModule.forFeature([{ name: LAZY }])], [Producer]);
      try {
        const conn = app.get(EchoMqConnection);
        expect(conn.ids.certain).toBe(true); // opened at startup: the node lease is held
        expect(app.get(Producer).jobs.mintId()).toMatch(/^job/);
        expect((await app.get(Producer).jobs.counts()).pending).toBe(0);
      } finally {
        await app.close();
      }
      const idle = await startApp([EchoMqModule.forRoot({ connection: { url: server.url }, consumers: false })]);
      const conn = idle.get(EchoMqConnection);
      await idle.close();
      await eventually(() => conn.client.status === 'end', 2000, 'the client closed');
    } finally {
      await server.stop();
    }
  });
});
