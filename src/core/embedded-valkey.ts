import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ValkeyUnavailableError } from './errors.js';

/** A throwaway `valkey-server` on a free loopback port. */
export interface EmbeddedValkey {
  /** Always `127.0.0.1`. */
  readonly host: string;
  /** The port it listens on. */
  readonly port: number;
  /** `redis://127.0.0.1:<port>`, for `connection.url`. */
  readonly url: string;
  /** The server's process id. */
  readonly pid: number;
  /** Stops the server (by pid) and removes its folder. */
  stop(): Promise<void>;
}

/** Options of `startEmbeddedValkey`. */
export interface EmbeddedValkeyOptions {
  /** Start in cluster mode with this one node owning all 16384 slots. */
  readonly cluster?: boolean;
  /** Extra `valkey-server` arguments, e.g. `['--maxmemory', '10mb']`. */
  readonly args?: readonly string[];
  /** The binary. Default: `valkey-server` on PATH. */
  readonly binary?: string;
  /** Listen on this port (e.g. to start an empty server where a stopped one was). Default: a free one. */
  readonly port?: number;
  /**
   * Run the server in a process group of its own, so a terminal's Ctrl-C (sent to the whole
   * foreground group) reaches only the caller, which then stops the server after its own
   * connections closed. The caller must stop it: a parent killed by SIGKILL leaves it running.
   * Default false (the server dies with the caller's group).
   */
  readonly detached?: boolean;
}

/** Finds a free TCP port on loopback. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Runs `valkey-cli -p <port> <args>` on loopback (synchronously); its stdout, `''` when it failed. */
export const cli = (port: number, ...args: string[]): string =>
  spawnSync('valkey-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8' }).stdout ?? '';

/**
 * Polls `check` every 25 ms until it holds; after `ms` fails with `ValkeyUnavailableError`
 * "<what> timed out after <ms> ms" (a check that throws counts as not yet).
 */
export async function waitFor(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await Promise.resolve().then(check).catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new ValkeyUnavailableError(`${what} timed out after ${ms} ms`);
}

/**
 * Starts a throwaway `valkey-server` (no persistence, loopback only) in a temp folder. Used by
 * the tests, the benchmark, and the sample app when no URL is configured.
 */
export async function startEmbeddedValkey(opts: EmbeddedValkeyOptions = {}): Promise<EmbeddedValkey> {
  const dir = mkdtempSync(join(tmpdir(), 'echomq-valkey-'));
  const port = opts.port ?? (await freePort());
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--daemonize', 'no'];
  if (opts.cluster) {
    // A lone node learns its own address only from a peer: announce it, or CLUSTER SLOTS names "".
    args.push('--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'), '--cluster-announce-ip', '127.0.0.1');
    // The bus port defaults to port + 10000, which does not exist above 55535 (a third of the
    // ephemeral range): pick it too.
    args.push('--cluster-port', String(await freePort()));
  }
  args.push(...(opts.args ?? []));
  const child: ChildProcess = spawn(opts.binary ?? 'valkey-server', args, { stdio: 'ignore', detached: opts.detached ?? false });
  let exited = false;
  child.on('exit', () => (exited = true));
  child.on('error', () => (exited = true));
  // A server that never answers is not left running (it would keep the caller's process alive).
  // A server started with `--requirepass` answers NOAUTH: it is up too.
  await waitFor(() => exited || /^(PONG|NOAUTH)/.test(cli(port, 'PING').trim()), 10_000, 'embedded valkey-server: start').catch((err: unknown) => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  if (exited) throw new ValkeyUnavailableError('embedded valkey-server failed to start (is valkey-server installed?)');
  if (opts.cluster) {
    cli(port, 'CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
    await waitFor(() => cli(port, 'CLUSTER', 'INFO').includes('cluster_state:ok'), 10_000, 'embedded valkey-server: cluster state');
  }
  child.unref();
  const pid = child.pid!;
  return {
    host: '127.0.0.1',
    port,
    url: `redis://127.0.0.1:${port}`,
    pid,
    async stop() {
      if (!exited) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
        await waitFor(() => exited, 5000, 'embedded valkey-server: stop').catch(() => undefined);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
