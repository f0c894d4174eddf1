/**
 * `npm run sample:two` as the exchange's operational specs run it: the launcher
 * (`dist/sample-app/main.js --instances 2`, sample-app/launcher.ts) with its own Valkey, its
 * instances' pids and ports read from its output.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { until } from './exchange.helpers.js';

const MAIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'sample-app', 'main.js');

/** True when `port` can be listened on (loopback and wildcard). */
const free = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, () => s.close(() => resolve(true)));
  });

/**
 * A port p with p and p + 1 free, below Linux's ephemeral range (32768..60999 by default): a port
 * in that range can be taken between this check and the instance's listen by any outgoing
 * connection's local port (the instances' own Valkey clients), seen as EADDRINUSE on a busy CI.
 */
export async function freePortPair(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const p = 20_000 + Math.floor(Math.random() * 12_000);
    if ((await free(p)) && (await free(p + 1))) return p;
  }
  throw new Error('no two free consecutive ports');
}

/** A running launcher. */
export interface Launched {
  readonly proc: ChildProcess;
  /** The Valkey the launcher started for its instances. */
  readonly valkeyUrl: string;
  /** `http://127.0.0.1:<port>` of instance 1 and 2. */
  readonly bases: readonly string[];
  /** Everything the launcher and its instances wrote so far. */
  output(): string;
  /** The newest pid of instance `i` (0-based), from the launcher's `instance-<i+1>: pid …` lines. */
  pid(i: number): number;
  /** Waits for instance `i` to run under a pid other than `old` and answer `/health`. */
  restarted(i: number, old: number, ms?: number): Promise<number>;
  /** Waits until instance `i` answers `/health` with 200. */
  healthy(i: number, ms?: number): Promise<void>;
  /** SIGTERMs the launcher and waits for it to exit; resolves to its exit code. */
  stop(): Promise<number | null>;
}

/** Starts `main.js --instances 2` (plus `args`) on a free port pair; resolves once both instances answer. */
export async function launchTwo(args: readonly string[] = []): Promise<Launched> {
  const port = await freePortPair();
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), NO_COLOR: '1' };
  delete env.ECHOMQ_URL;
  const proc = spawn(process.execPath, [MAIN, '--instances', '2', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '';
  const keep = (c: Buffer): void => {
    out = (out + c.toString()).slice(-4_000_000);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  const bases = [0, 1].map((i) => `http://127.0.0.1:${port + i}`);
  const pid = (i: number): number => {
    const all = [...out.matchAll(new RegExp(`instance-${i + 1}: pid (\\d+),`, 'g'))];
    return all.length > 0 ? Number(all[all.length - 1][1]) : 0;
  };
  const healthy = async (i: number, ms = 30_000): Promise<void> =>
    until(
      async () => (await fetch(`${bases[i]}/health`).catch(() => undefined))?.status === 200,
      ms,
      () => `instance-${i + 1} did not answer /health:\n${out.slice(-3000)}`,
    );
  const launched: Launched = {
    proc,
    valkeyUrl: '',
    bases,
    output: () => out,
    pid,
    healthy,
    restarted: async (i, old, ms = 30_000) => {
      await until(async () => pid(i) !== old && pid(i) !== 0, ms, () => `instance-${i + 1} was not restarted:\n${out.slice(-3000)}`);
      await healthy(i, ms);
      return pid(i);
    },
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
  try {
    await until(async () => /embedded valkey-server at redis:\/\/\S+/.test(out), 20_000, () => `the launcher did not start its Valkey:\n${out}`);
    const valkeyUrl = /embedded valkey-server at (redis:\/\/\S+?),?\s/.exec(out)?.[1] ?? '';
    await healthy(0);
    await healthy(1);
    return { ...launched, valkeyUrl };
  } catch (err) {
    await launched.stop();
    throw err;
  }
}

/** True when the process `pid` is alive. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
