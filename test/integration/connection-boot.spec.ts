import 'reflect-metadata';
import { EchoMqModule, type EchoMqModuleOptions } from '../../src/index.js';
import { freePort, startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { CapturedLogs, startApp } from '../helpers/nest.js';

// Issue 14: connection errors say what is wrong, and an app started while Valkey is down may wait.
const boot = async (o: EchoMqModuleOptions, logs?: CapturedLogs) => startApp([EchoMqModule.forRoot(o)], [], logs);
const failure = async (o: EchoMqModuleOptions, logs?: CapturedLogs): Promise<{ code?: string; name: string; message: string; ms: number }> => {
  const t0 = Date.now();
  try {
    const app = await boot(o, logs);
    await app.close();
  } catch (err) {
    const e = err as { code?: string; name: string; message: string };
    return { code: e.code, name: e.name, message: e.message, ms: Date.now() - t0 };
  }
  throw new Error('the app started');
};

describe('connection errors and boot retry', () => {
  const servers: EmbeddedValkey[] = [];
  afterAll(async () => {
    for (const s of servers) await s.stop();
  });

  it('a wrong password is EMQ_AUTH (AuthenticationError), at once, even with retryAtBoot; the right one boots', async () => {
    const locked = await startEmbeddedValkey({ args: ['--requirepass', 'secret'] });
    servers.push(locked);
    const wrong = await failure({ connection: { url: `redis://:not-it@127.0.0.1:${locked.port}`, retryAtBoot: { maxWaitMs: 10_000 } } });
    expect([wrong.code, wrong.name]).toEqual(['EMQ_AUTH', 'AuthenticationError']);
    expect(wrong.message).toMatch(/WRONGPASS/);
    expect(wrong.ms).toBeLessThan(5000); // not retried for 10 s
    const none = await failure({ connection: { port: locked.port } });
    expect([none.code, none.name]).toEqual(['EMQ_AUTH', 'AuthenticationError']);
    const app = await boot({ connection: { port: locked.port, password: 'secret' } });
    await app.close();
  }, 30_000);

  it('by default an app started while Valkey is down fails fast with EMQ_UNAVAILABLE', async () => {
    const port = await freePort();
    const r = await failure({ connection: { port, connectTimeoutMs: 1000 } });
    expect(r.code).toBe('EMQ_UNAVAILABLE');
    expect(r.ms).toBeLessThan(5000);
  }, 15_000);

  it('with retryAtBoot it waits for a Valkey started 2 s later, logging each attempt', async () => {
    const port = await freePort();
    const logs = new CapturedLogs();
    const later = new Promise<EmbeddedValkey>((resolve, reject) => {
      setTimeout(() => startEmbeddedValkey({ port }).then(resolve, reject), 2000);
    });
    const t0 = Date.now();
    const app = await boot({ connection: { port, connectTimeoutMs: 1000, retryAtBoot: { maxWaitMs: 20_000, intervalMs: 100 } } }, logs);
    const waited = Date.now() - t0;
    servers.push(await later);
    await app.close();
    expect(waited).toBeGreaterThanOrEqual(1900);
    const attempts = logs.find('warn', 'Valkey unreachable at boot, attempt');
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(attempts[0]).toMatch(/attempt 1 \(EMQ_UNAVAILABLE .*\); retrying in 100 ms/);
    expect(logs.find('warn', 'connected to Valkey at boot attempt')).toHaveLength(1);
  }, 30_000);

  it('the wait is bounded: after maxWaitMs the boot fails with EMQ_UNAVAILABLE naming the attempts', async () => {
    const port = await freePort();
    const r = await failure({ connection: { port, connectTimeoutMs: 500, retryAtBoot: { maxWaitMs: 1500, intervalMs: 100 } } });
    expect(r.code).toBe('EMQ_UNAVAILABLE');
    expect(r.message).toMatch(/still unreachable after \d+ attempts over 1500 ms/);
    expect(r.ms).toBeGreaterThanOrEqual(1400);
    expect(r.ms).toBeLessThan(6000);
  }, 15_000);

  it('bad retryAtBoot options are refused before any I/O', () => {
    const bad = (retryAtBoot: unknown) => () => EchoMqModule.forRoot({ connection: { port: 1, retryAtBoot: retryAtBoot as boolean } });
    expect(bad({ maxWait: 10 })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(bad({ maxWaitMs: 0 })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(bad('yes')).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(bad(true)).not.toThrow();
  });
});
