/** Instances of the exchange as child processes (`dist/sample-app/main.js`), for the load script and the tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** An instance in a child process. */
export interface ChildInstance {
  readonly proc: ChildProcess;
  /** `http://127.0.0.1:<port>`. */
  readonly base: string;
  /** Its port (to restart it on the same one). */
  readonly port: number;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** SIGTERMs it (clean shutdown) and waits for it to exit. */
  stop(): Promise<void>;
  /** SIGKILLs it and waits for it to exit. */
  kill(): Promise<void>;
}

/**
 * The compiled entry point: next to this file's compiled form (`dist/sample-app/main.js`), also
 * when this file runs from source (the tests, through ts-jest).
 */
const HERE = fileURLToPath(import.meta.url);
const ENTRY = HERE.endsWith('.ts') ? join(dirname(HERE), '..', '..', 'dist', 'sample-app', 'main.js') : join(dirname(HERE), '..', 'main.js');

/**
 * Starts one instance on `url`, named `instance`, on `port` (default: a free one); resolves once
 * it listens. `env` adds to (or overrides) the inherited environment.
 */
export function spawnInstance(url: string, instance: string, port = 0, env: NodeJS.ProcessEnv = {}): Promise<ChildInstance> {
  const proc = spawn(process.execPath, [ENTRY], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ECHOMQ_URL: url, PORT: String(port), INSTANCE: instance, NO_COLOR: '1', ...env } });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const signal = async (sig: NodeJS.Signals): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null && proc.pid !== undefined) process.kill(proc.pid, sig);
    await exited;
  };
  return new Promise((resolve, reject) => {
    // Kept whole (bounded: the last 1 MB), for a test to read what the instance logged.
    let out = '';
    let listening = false;
    const keep = (c: Buffer): void => {
      out = (out + c.toString()).slice(-1_000_000);
    };
    const timer = setTimeout(() => void signal('SIGKILL').then(() => reject(new Error(`instance did not start: ${out}`))), 20_000);
    proc.stderr?.on('data', keep);
    proc.stdout?.on('data', (chunk: Buffer) => {
      keep(chunk);
      const m = listening ? null : /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        listening = true;
        clearTimeout(timer);
        const base = m[1].replace('localhost', '127.0.0.1');
        resolve({ proc, base, port: Number(new URL(base).port), output: () => out, stop: () => signal('SIGTERM'), kill: () => signal('SIGKILL') });
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`instance exited: ${out}`));
    });
  });
}
