/**
 * The launcher of `npm run sample:two` / `--instances N`: N instances as child processes on one
 * Valkey. The Valkey (its own, unless `ECHOMQ_URL` names one) lives as long as the launcher, not
 * as long as its children: an instance may die and be restarted against the same data. The
 * launcher stops the instances and then its Valkey only when it is itself stopped (SIGINT,
 * SIGTERM).
 *
 * Restarts: an instance that dies abnormally (a crash, `kill -9`) is restarted after
 * `RESTART_DELAY_MS` under the same name and port, unless `--no-restart`; one that stops cleanly
 * (exit 0, or SIGTERM/SIGINT sent to it alone: `kill <pid>`) stays down. Either way the launcher
 * prints the command that starts it again by hand.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@nestjs/common';
import { startEmbedded, type EmbeddedServer } from './embedded-valkey.js';

/** How long the launcher waits before restarting an instance that died. */
export const RESTART_DELAY_MS = 1000;
/** An instance that dies this many times in a row within `CRASH_LOOP_MS` of its start stays down. */
const CRASH_LOOP_LIMIT = 5;
const CRASH_LOOP_MS = 10_000;
/** After Ctrl-C, how long the instances get to stop on their own before the launcher SIGTERMs them. */
const SIGINT_GRACE_MS = 5000;

/** What the launcher is told. */
export interface LaunchOptions {
  /** The Valkey to share; unset: the launcher starts one. */
  readonly url?: string;
  /** The first instance's port (instance i listens on port + i). */
  readonly port: number;
  readonly instances: number;
  /** Restart instances that die abnormally (default true; `--no-restart` turns it off). */
  readonly restart: boolean;
  readonly log: Logger;
  /** Masks a URL's password for the logs. */
  readonly redact: (url: string) => string;
}

/** One instance the launcher runs. */
interface Slot {
  readonly name: string;
  readonly port: number;
  proc?: ChildProcess;
  startedAt: number;
  quickDeaths: number;
}

/** The shell command that starts instance `slot` against `url` (the same as the launcher does). */
export function restartCommand(url: string, port: number, name: string): string {
  const entry = relative(process.cwd(), fileURLToPath(new URL('./main.js', import.meta.url))) || 'dist/sample-app/main.js';
  return `ECHOMQ_URL=${url} PORT=${port} INSTANCE=${name} node ${entry}`;
}

/** Runs the instances until the launcher is stopped; resolves after they and its Valkey stopped. */
export async function launch(o: LaunchOptions): Promise<void> {
  let embedded: EmbeddedServer | undefined;
  let url = o.url;
  if (!url) {
    embedded = await startEmbedded(o.log);
    url = embedded.url;
    o.log.log(`Valkey: embedded valkey-server at ${url} (pid ${embedded.pid}), kept until this launcher stops (Ctrl-C); set ECHOMQ_URL to use your own`);
  }
  const shared = url;
  const entry = fileURLToPath(new URL('./main.js', import.meta.url));
  const slots: Slot[] = Array.from({ length: o.instances }, (_, i) => ({ name: `instance-${i + 1}`, port: o.port + i, startedAt: 0, quickDeaths: 0 }));
  let stopping = false;
  const timers = new Set<NodeJS.Timeout>();
  let wake: () => void = () => undefined;

  const start = (s: Slot): void => {
    s.startedAt = Date.now();
    const proc = spawn(process.execPath, [entry], { stdio: 'inherit', env: { ...process.env, ECHOMQ_URL: shared, PORT: String(s.port), INSTANCE: s.name } });
    s.proc = proc;
    o.log.log(`${s.name}: pid ${proc.pid}, http://localhost:${s.port}`);
    proc.once('exit', (code, signal) => {
      s.proc = undefined;
      wake();
      if (stopping) return;
      const how = signal ? `killed by ${signal}` : `exited with code ${code}`;
      const clean = code === 0 || signal === 'SIGTERM' || signal === 'SIGINT';
      s.quickDeaths = Date.now() - s.startedAt < CRASH_LOOP_MS ? s.quickDeaths + 1 : 0;
      const by = `restart it by hand: ${restartCommand(o.redact(shared), s.port, s.name)}`;
      if (clean || !o.restart || s.quickDeaths >= CRASH_LOOP_LIMIT) {
        const why = clean ? 'stopped cleanly, stays down' : !o.restart ? 'not restarted (--no-restart)' : `died ${s.quickDeaths} times in a row within ${CRASH_LOOP_MS / 1000} s of starting, stays down`;
        o.log.warn(`${s.name} ${how}: ${why}; Valkey stays up; ${by}`);
        return;
      }
      o.log.warn(`${s.name} ${how}: restarting it in ${RESTART_DELAY_MS} ms on the same Valkey and port (--no-restart to keep it down)`);
      const t = setTimeout(() => {
        timers.delete(t);
        if (!stopping) start(s);
      }, RESTART_DELAY_MS);
      timers.add(t);
    });
  };

  for (const s of slots) start(s);
  o.log.log(
    [
      `started ${slots.length} instances on ${o.redact(shared)}; each restarts by hand (after it stopped) with:`,
      ...slots.map((s) => `  ${restartCommand(o.redact(shared), s.port, s.name)}`),
      o.restart ? `an instance that dies abnormally is restarted after ${RESTART_DELAY_MS} ms (--no-restart: not)` : 'instances that die stay down (--no-restart)',
    ].join('\n'),
  );

  // Runs until SIGINT/SIGTERM. Ctrl-C reaches the instances too (one process group; the Valkey
  // has its own): give them a moment to shut down on their own, since a second signal during a
  // Nest shutdown ends it abruptly. Then SIGTERM those still up, wait, and stop the Valkey.
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  stopping = true;
  for (const t of timers) clearTimeout(t);
  const alive = (): Slot[] => slots.filter((s) => s.proc !== undefined);
  const allDown = async (ms: number): Promise<void> => {
    const end = Date.now() + ms;
    while (alive().length > 0 && Date.now() < end) await new Promise<void>((r) => ((wake = r), setTimeout(r, 100)));
  };
  if (signal === 'SIGINT') await allDown(SIGINT_GRACE_MS);
  for (const s of alive()) if (s.proc?.pid !== undefined) process.kill(s.proc.pid, 'SIGTERM');
  await allDown(Number.POSITIVE_INFINITY);
  await embedded?.stop();
}
