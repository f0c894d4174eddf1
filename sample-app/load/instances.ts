/** Instances of the exchange as child processes (`dist/sample-app/main.js`), for the load script and the tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** An instance in a child process. */
export interface ChildInstance {
  readonly proc: ChildProcess;
  /** `http://127.0.0.1:<port>`. */
  readonly base: string;
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

/** Starts one instance on `url` and a free port, named `instance`; resolves once it listens. */
export function spawnInstance(url: string, instance: string): Promise<ChildInstance> {
  const proc = spawn(process.execPath, [ENTRY], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ECHOMQ_URL: url, PORT: '0', INSTANCE: instance, NO_COLOR: '1' } });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const signal = async (sig: NodeJS.Signals): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null && proc.pid !== undefined) process.kill(proc.pid, sig);
    await exited;
  };
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => void signal('SIGKILL').then(() => reject(new Error(`instance did not start: ${out}`))), 20_000);
    proc.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        proc.stdout?.removeAllListeners('data');
        proc.stdout?.resume();
        resolve({ proc, base: m[1].replace('localhost', '127.0.0.1'), stop: () => signal('SIGTERM'), kill: () => signal('SIGKILL') });
      }
    });
    proc.stderr?.on('data', (c: Buffer) => (out += c.toString()));
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`instance exited: ${out}`));
    });
  });
}
