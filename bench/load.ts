/**
 * What else ran on the machine during a phase: the machine's busy CPU from `/proc/stat` minus
 * this process tree (`process.cpuUsage()`, plus child workers' own) and the Valkey server
 * (`/proc/<pid>/stat`), and the load average. Linux only; elsewhere the figures are absent.
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';

/** Clock ticks per second of `/proc` (USER_HZ, 100 on every Linux this runs on). */
const HZ = 100;

/**
 * A phase is flagged noisy when other processes used more than this many cores on average
 * during it (0.15 cores: 7.5% of a 2-CPU machine).
 */
export const NOISY_OTHER_CORES = 0.15;

/** The machine's and Valkey's CPU at one instant (µs), or undefined where `/proc` is missing. */
export interface LoadSnapshot {
  readonly at: number;
  readonly machineBusyUs?: number;
  readonly valkeyUs?: number;
  readonly selfUs: number;
}

/** What else ran during a phase. */
export interface PhaseLoad {
  /** Cores busy on the whole machine, on average over the phase. */
  readonly machineCores?: number;
  /** Cores used by processes other than this bench (and its workers) and Valkey, on average. */
  readonly otherCores?: number;
  /** The 1-minute load average at the end of the phase (it includes the bench itself). */
  readonly loadAvg1: number;
  /** True when `otherCores` is above `NOISY_OTHER_CORES`. */
  readonly noisy: boolean;
}

function readMachineBusyUs(): number | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
    // cpu user nice system idle iowait irq softirq steal guest guest_nice (guest is inside user).
    const f = line.trim().split(/\s+/).slice(1).map(Number);
    const busy = f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] ?? 0);
    return (busy / HZ) * 1e6;
  } catch {
    return undefined;
  }
}

function readPidUs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces) start after the last ')'.
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after "(comm) ".
    return ((Number(f[11]) + Number(f[12])) / HZ) * 1e6;
  } catch {
    return undefined;
  }
}

/** Samples the machine, the Valkey server `valkeyPid` and this process now. */
export function snapshot(valkeyPid: number | undefined): LoadSnapshot {
  const c = process.cpuUsage();
  return { at: performance.now(), machineBusyUs: readMachineBusyUs(), valkeyUs: readPidUs(valkeyPid), selfUs: c.user + c.system };
}

/** The load between two snapshots; `childUs` is CPU the bench's own child processes reported. */
export function phaseLoad(a: LoadSnapshot, b: LoadSnapshot, childUs = 0): PhaseLoad {
  const wallUs = (b.at - a.at) * 1000;
  const loadAvg1 = loadavg()[0];
  if (a.machineBusyUs === undefined || b.machineBusyUs === undefined || wallUs <= 0) return { loadAvg1, noisy: false };
  const machine = b.machineBusyUs - a.machineBusyUs;
  const valkey = a.valkeyUs !== undefined && b.valkeyUs !== undefined ? b.valkeyUs - a.valkeyUs : 0;
  const mine = b.selfUs - a.selfUs + childUs + valkey;
  const otherCores = Math.max(0, machine - mine) / wallUs;
  return { machineCores: machine / wallUs, otherCores, loadAvg1, noisy: otherCores > NOISY_OTHER_CORES };
}
