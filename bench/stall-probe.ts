/**
 * The machine's own scheduling stalls during a latency phase: an idle child process (no I/O, no
 * allocation) that only measures how late its 1 ms timer fires (`monitorEventLoopDelay`). Any
 * stall it sees comes from the machine (other processes, vCPU steal), not from the code under
 * test, so a fan-in p99 near the probe's p99 is the machine's floor, not a wait in the protocol.
 */
import { spawn } from 'node:child_process';

/** What the probe saw: its timer's lateness (ms). */
export interface StallFigures {
  readonly p99: number;
  readonly max: number;
}

const CHILD = `
const { monitorEventLoopDelay } = require('node:perf_hooks');
const h = monitorEventLoopDelay({ resolution: 1 });
h.enable();
const tick = setInterval(() => undefined, 1);
process.stdin.on('data', () => undefined);
process.stdin.on('end', () => {
  h.disable();
  clearInterval(tick);
  process.stdout.write(JSON.stringify({ p99: h.percentile(99) / 1e6, max: h.max / 1e6 }));
});`;

/** A running probe; `stop` ends it and resolves to its figures (undefined if it failed). */
export interface StallProbe {
  stop(): Promise<StallFigures | undefined>;
}

/** Starts the probe (a child `node` process). */
export function startStallProbe(): StallProbe {
  const child = spawn(process.execPath, ['-e', CHILD], { stdio: ['pipe', 'pipe', 'ignore'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  const ended = new Promise<StallFigures | undefined>((resolve) => {
    child.on('error', () => resolve(undefined));
    child.on('close', () => {
      try {
        resolve(JSON.parse(out) as StallFigures);
      } catch {
        resolve(undefined);
      }
    });
  });
  return {
    stop: () => {
      child.stdin.end();
      return ended;
    },
  };
}
