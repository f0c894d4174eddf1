import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The compiled entry point of a fixture (`npm test` builds test/fixtures into dist/). */
export function fixturePath(name: string): string {
  const p = join(ROOT, 'dist', 'test', 'fixtures', `${name}.js`);
  if (!existsSync(p)) throw new Error(`${p} is missing: run \`npm run build\` first`);
  return p;
}

/** A child process whose stdout is read line by line. */
export interface ChildHandle {
  readonly proc: ChildProcess;
  readonly pid: number;
  /** Every stdout line so far. */
  readonly lines: string[];
  /** Everything the child wrote on stderr so far. */
  stderr(): string;
  /** Resolves with the first line (already seen or to come) matching `re`. */
  waitForLine(re: RegExp, ms?: number): Promise<RegExpMatchArray>;
  /** Writes lines to the child's stdin. */
  send(...lines: string[]): void;
  /** Sends a signal to this child (by pid). */
  signal(sig: NodeJS.Signals): void;
  /** Resolves when the child has exited, with its code or signal. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly hasExited: () => boolean;
}

const live = new Set<ChildHandle>();

/** Starts `node <fixture> ...args` (with `env` added to this process's), tracked so `killChildren` can end it. */
export function spawnFixture(name: string, args: readonly string[], env: Readonly<Record<string, string>> = {}): ChildHandle {
  return spawnScript(fixturePath(name), args, env);
}

/** Starts `node <script> ...args` (e.g. the built CLI), tracked as `spawnFixture`'s children are. */
export function spawnScript(script: string, args: readonly string[], env: Readonly<Record<string, string>> = {}): ChildHandle {
  const proc = spawn(process.execPath, [script, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  if (proc.pid === undefined) throw new Error(`could not spawn ${script}`);
  const pid = proc.pid;
  const lines: string[] = [];
  let err = '';
  let buf = '';
  let gone = false;
  const listeners = new Set<() => void>();
  proc.stdout?.setEncoding('utf8');
  proc.stdout?.on('data', (chunk: string) => {
    buf += chunk;
    let nl = buf.indexOf('\n');
    while (nl >= 0) {
      lines.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
      nl = buf.indexOf('\n');
    }
    for (const l of [...listeners]) l();
  });
  proc.stderr?.setEncoding('utf8');
  proc.stderr?.on('data', (chunk: string) => (err += chunk));
  proc.stdin?.on('error', () => undefined);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.on('exit', (code, signal) => {
      gone = true;
      for (const l of [...listeners]) l();
      resolve({ code, signal });
    });
  });
  const handle: ChildHandle = {
    proc,
    pid,
    lines,
    stderr: () => err,
    hasExited: () => gone,
    exited,
    send: (...ls) => {
      proc.stdin?.write(ls.map((l) => l + '\n').join(''));
    },
    signal: (sig) => {
      if (!gone) process.kill(pid, sig);
    },
    waitForLine: (re, ms = 20_000) =>
      new Promise((resolve, reject) => {
        const check = (): boolean => {
          for (const l of lines) {
            const m = re.exec(l);
            if (m) {
              done();
              resolve(m);
              return true;
            }
          }
          if (gone) {
            done();
            reject(new Error(`child ${pid} exited before printing ${re}; stdout: ${lines.join(' | ')}; stderr: ${err}`));
            return true;
          }
          return false;
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`timed out waiting for ${re} from child ${pid}; stdout: ${lines.join(' | ')}; stderr: ${err}`));
        }, ms);
        const done = () => {
          clearTimeout(timer);
          listeners.delete(listener);
        };
        const listener = () => void check();
        listeners.add(listener);
        check();
      }),
  };
  live.add(handle);
  void exited.then(() => live.delete(handle));
  return handle;
}

/** SIGKILLs every fixture child still running (a stopped child dies too) and waits for them. */
export async function killChildren(): Promise<void> {
  const all = [...live];
  for (const c of all) {
    try {
      process.kill(c.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  await Promise.all(all.map((c) => c.exited));
}

/** True while a process with this pid exists (signal 0 probes without killing). */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
