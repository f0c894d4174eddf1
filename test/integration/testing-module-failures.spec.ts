import { startEmbeddedValkey } from '../../src/testing.js';
import { alive, killChildren, spawnFixture, type ChildHandle } from '../helpers/child.js';
import { descendantServers } from '../helpers/processes.js';

// A test whose module fails around EchoMqTestingModule: the process (jest, in real life) must end
// by itself and no valkey-server may stay behind. Each case runs in a child process, so that its
// exit (or its hang) and its servers can be watched from here.

afterAll(killChildren);

/** Resolves once `pid` is gone, false if it is still there after `ms`. */
async function goneWithin(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

/** Runs the fixture in `mode`; the child prints what it saw, then must exit within 8 s on its own. */
async function run(mode: string): Promise<{ child: ChildHandle; servers: number[]; failed: string; code: number | null }> {
  const child = spawnFixture('testing-failure-child', [mode]);
  const [, failed] = await child.waitForLine(/^FAILED (.*)$/, 20_000);
  const t0 = Date.now();
  const ended = await Promise.race([child.exited, new Promise<null>((r) => setTimeout(() => r(null), 8000))]);
  expect({ exitedBySelfWithinMs: ended ? Date.now() - t0 < 8000 : false, stderr: ended ? '' : child.stderr() }).toEqual({ exitedBySelfWithinMs: true, stderr: '' });
  const servers = child.lines.filter((l) => l.startsWith('SERVER ')).map((l) => Number(l.slice(7)));
  return { child, servers, failed: failed!, code: ended!.code };
}

describe('EchoMqTestingModule: a failing test module leaves no valkey-server and lets the process exit', () => {
  it('a DI error (a provider nobody provides): compile rejects, the server that started dies, the process exits by itself', async () => {
    const { servers, failed, code } = await run('di');
    expect(failed).toMatch(/^Error Nest can't resolve dependencies of the Billing \(QueueService, \?\)/);
    // The module's server did start (in the background, after compile had already rejected)…
    expect(servers.length).toBe(1);
    expect(code).toBe(0);
    // …and went with the process.
    for (const pid of servers) expect(await goneWithin(pid, 3000)).toBe(true);
  });

  it.each([
    ['bad-option', /^EMQ_BAD_OPTION defaults\.attempts must be an integer/],
    ['bad-server-option', /^EMQ_BAD_OPTION valkey\.port must be an integer from 1 to 65535 in EchoMqTestingModule\.forRoot options/],
  ])('%s: refused at forRoot, before any server starts', async (mode, message) => {
    const { servers, failed, code } = await run(mode);
    expect(failed).toMatch(message);
    expect(servers).toEqual([]);
    expect(code).toBe(0);
  });

  it('a failed boot (no such binary): a typed error naming the cause, no process left', async () => {
    const { servers, failed, code } = await run('no-binary');
    expect(failed).toMatch(/^EMQ_UNAVAILABLE embedded valkey-server failed to start on port \d+ \(is valkey-server installed\?\): .*not found/);
    expect(servers).toEqual([]);
    expect(code).toBe(0);
  });

  it('a process killed by SIGKILL (no exit event, as a killed jest worker) takes its server with it', async () => {
    const child = spawnFixture('testing-failure-child', ['sigkill']);
    const [, pid] = await child.waitForLine(/^SERVER (\d+)$/);
    expect(await child.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await goneWithin(Number(pid), 3000)).toBe(true);
  });
});

describe('startEmbeddedValkey: a failed start leaves nothing', () => {
  it('on a taken port: the error carries the server log, and no server process stays', async () => {
    const first = await startEmbeddedValkey();
    try {
      const before = descendantServers();
      expect(before).toEqual(expect.arrayContaining([first.pid]));
      await expect(startEmbeddedValkey({ port: first.port })).rejects.toMatchObject({
        code: 'EMQ_UNAVAILABLE',
        message: expect.stringMatching(/failed to start on port \d+ \(exit status 1\): .*Address already in use/),
      });
      expect(descendantServers().sort()).toEqual(before.sort());
    } finally {
      await first.stop();
    }
    expect(alive(first.pid)).toBe(false);
  });

  it('refuses bad options before starting anything (EMQ_BAD_OPTION)', async () => {
    const before = descendantServers();
    await expect(startEmbeddedValkey({ args: ['--port', 1] as unknown as string[] })).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('args must be an array of strings') });
    await expect(startEmbeddedValkey({ prot: 7000 } as unknown as { port: number })).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('prot') });
    expect(descendantServers()).toEqual(before);
  });
});
