import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { escapeControls } from './control-chars.js';
import { InvalidOptionError, ValkeyUnavailableError } from './errors.js';
import { optionPath, refuseUnknownKeys } from './known-keys.js';

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
   * connections closed. Default false (a Ctrl-C stops the server with the caller's group). Either
   * way the server dies with the caller, even one killed by SIGKILL.
   */
  readonly detached?: boolean;
}

const SERVER_KEYS: ReadonlySet<string> = new Set(['cluster', 'args', 'binary', 'port', 'detached'] satisfies (keyof EmbeddedValkeyOptions)[]);

/**
 * Refuses bad `EmbeddedValkeyOptions` before anything starts (`InvalidOptionError`,
 * EMQ_BAD_OPTION): an unknown key, or a value of the wrong type or range. `what` and `path` name
 * where the options were given.
 */
export function validateEmbeddedValkeyOptions(o: EmbeddedValkeyOptions | undefined, what = 'startEmbeddedValkey options', path?: string): void {
  refuseUnknownKeys(o, SERVER_KEYS, what, { path });
  if (o === undefined) return;
  const at = (k: string) => optionPath(path, k);
  for (const k of ['cluster', 'detached'] as const) {
    if (o[k] !== undefined && typeof o[k] !== 'boolean') throw new InvalidOptionError(`${at(k)} must be a boolean in ${what}`);
  }
  if (o.binary !== undefined && (typeof o.binary !== 'string' || o.binary === '')) throw new InvalidOptionError(`${at('binary')} must be a non-empty string in ${what}`);
  if (o.port !== undefined && (!Number.isInteger(o.port) || o.port < 1 || o.port > 65535)) throw new InvalidOptionError(`${at('port')} must be an integer from 1 to 65535 in ${what}`);
  if (o.args !== undefined && (!Array.isArray(o.args) || o.args.some((a) => typeof a !== 'string'))) throw new InvalidOptionError(`${at('args')} must be an array of strings in ${what}`);
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
 * The shell that runs the server: prints its pid, then its exit status once it exits. A watcher
 * reads fd 3, a pipe from the caller: end of file (the caller stopped it, or died, even by
 * SIGKILL or abort) kills the server, so no server outlives the process that started it. A
 * signal to the shell (Ctrl-C to its group) kills the server too: a background job of a
 * non-interactive shell ignores SIGINT. The server's output goes to `$1/server.log`, read on a
 * failed start; the watcher removes the folder `$1` after the kill.
 */
const WRAPPER = [
  'dir=$1; shift',
  '"$@" >"$dir/server.log" 2>&1 3<&- & pid=$!',
  'echo "pid $pid"',
  '( read -r _ <&3; kill -9 "$pid" 2>/dev/null; sleep 1; rm -rf "$dir" ) &',
  'trap \'kill -9 "$pid" 2>/dev/null; exit 1\' INT TERM HUP',
  'wait "$pid"; echo "exit $?"',
].join('\n');

/** Servers started and not yet stopped, killed synchronously if the process exits first. */
const running = new Set<number>();
const killRunning = (): void => {
  for (const pid of running) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
};

/** The last lines of the server's log, for an error message. */
function logTail(file: string): string {
  try {
    const lines = readFileSync(file, 'utf8').trim().split('\n').slice(-3).map(escapeControls);
    return lines.length && lines[0] ? `: ${lines.join(' | ')}` : '';
  } catch {
    return '';
  }
}

/**
 * Starts a throwaway `valkey-server` (no persistence, loopback only) in a temp folder. Used by
 * the tests, the benchmark, and the sample app when no URL is configured. The server never
 * outlives the calling process (a watcher kills it when the caller exits or dies, whatever the
 * cause), and keeps nothing of the caller's alive (no ref'd handle). A failed start (no binary,
 * the port taken, no answer in 10 s) leaves no process and no folder.
 */
export async function startEmbeddedValkey(opts: EmbeddedValkeyOptions = {}): Promise<EmbeddedValkey> {
  validateEmbeddedValkeyOptions(opts);
  const dir = mkdtempSync(join(tmpdir(), 'echomq-valkey-'));
  try {
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
    return await launch(opts, dir, port, args);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Runs the server under the wrapper and waits until it answers; on failure nothing is left running. */
async function launch(opts: EmbeddedValkeyOptions, dir: string, port: number, args: string[]): Promise<EmbeddedValkey> {
  const shell = spawn('/bin/sh', ['-c', WRAPPER, 'echomq-valkey', dir, opts.binary ?? 'valkey-server', ...args], {
    stdio: ['ignore', 'pipe', 'ignore', 'pipe'],
    detached: opts.detached ?? false,
  });
  const out = shell.stdio[1] as Readable & { unref(): void };
  const lifeline = shell.stdio[3] as Writable & { unref(): void };
  // Nothing here keeps the caller's event loop alive: a test process that forgot (or could not)
  // stop the server still exits, and the server with it.
  shell.unref();
  out.unref();
  lifeline.unref();
  lifeline.on('error', () => undefined);
  let pid = 0;
  let exited = false;
  let status = '';
  let buf = '';
  out.setEncoding('utf8');
  out.on('data', (chunk: string) => {
    buf += chunk;
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.startsWith('pid ')) {
        pid = Number(line.slice(4));
        running.add(pid);
        if (running.size === 1) process.on('exit', killRunning);
      } else if (line.startsWith('exit ')) status = line.slice(5);
    }
  });
  const gone = (): void => {
    exited = true;
    running.delete(pid);
    if (running.size === 0) process.off('exit', killRunning);
  };
  shell.on('exit', gone);
  shell.on('error', gone);
  const kill = (): void => {
    lifeline.destroy(); // the watcher kills the server too, should this kill miss
    try {
      if (pid) process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  };
  const settle = () => waitFor(() => exited, 5000, 'embedded valkey-server: stop').catch(() => undefined);
  try {
    // Up when the server answering on the port is this one (on a taken port, another one
    // answers until this one gives up); one started with `--requirepass` answers NOAUTH.
    const ours = (): boolean => {
      const info = cli(port, 'INFO', 'server');
      return /^NOAUTH/.test(info.trim()) || Number(/process_id:(\d+)/.exec(info)?.[1]) === pid;
    };
    await waitFor(() => exited || status !== '' || (pid > 0 && ours()), 10_000, 'embedded valkey-server: start');
    if (exited || status !== '') {
      const why = status === '127' ? ' (is valkey-server installed?)' : ` (exit status ${status || '?'})`;
      throw new ValkeyUnavailableError(`embedded valkey-server failed to start on port ${port}${why}${logTail(join(dir, 'server.log'))}`);
    }
    if (opts.cluster) {
      cli(port, 'CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
      await waitFor(() => cli(port, 'CLUSTER', 'INFO').includes('cluster_state:ok'), 10_000, 'embedded valkey-server: cluster state');
    }
  } catch (err) {
    kill();
    await settle();
    throw err;
  }
  return {
    host: '127.0.0.1',
    port,
    url: `redis://127.0.0.1:${port}`,
    pid,
    async stop() {
      if (!exited) {
        kill();
        await settle();
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
