/**
 * Measurement around a phase: wall time, this process's CPU, Valkey's CPU and command counts
 * (from `INFO cpu` / `INFO commandstats`, reset per phase), Valkey's `used_memory`, and what
 * else ran on the machine meanwhile (`load.ts`).
 */
import { Redis } from 'iovalkey';
import { phaseLoad, snapshot, type PhaseLoad } from './load.js';

/** What one phase cost, per job. */
export interface PhaseCost {
  /** Wall seconds of the timed part. */
  readonly seconds: number;
  /** Wall µs per job (the inverse of the throughput; the pacing interval in the latency phase). */
  readonly wallUsPerJob: number;
  /** Client CPU µs per job (this process, plus child processes when they report theirs). */
  readonly clientUsPerJob: number;
  /** Valkey CPU µs per job (user + sys). */
  readonly serverUsPerJob: number;
  /** Script calls (EVALSHA/EVAL/FCALL) per job. */
  readonly scriptsPerJob: number;
  /** Valkey µs spent executing scripts (their `usec` in commandstats) per job. */
  readonly scriptUsPerJob: number;
  /** Every command Valkey ran, including those run inside scripts, per job. */
  readonly commandsPerJob: number;
  /** Blocking pops per job (BLPOP, BZPOPMIN…): idle waits. */
  readonly blockingPerJob: number;
  /** Jobs the timed part counted (the divisor of every per-job figure). */
  readonly jobs?: number;
  /** Valkey's CPU over the wall time: the share of one core the server was busy. */
  readonly valkeyBusy?: number;
  /** The machine's load during the phase, and whether other processes made it noisy. */
  readonly load?: PhaseLoad;
}

/** A started measurement; `stop()` ends it. */
export interface Measurement {
  /** The value of the `mark` given to `start()` at the instant the clock started (0 without one). */
  readonly startMark: number;
  /** Ends the measurement; `extraClientUs` adds CPU spent in child processes. */
  stop(jobs: number, extraClientUs?: number): Promise<PhaseCost>;
}

/** An `INFO` reply as a map of its `field:value` lines. */
export const parseInfo = (text: string): Map<string, string> => {
  const m = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0) m.set(line.slice(0, i), line.slice(i + 1));
  }
  return m;
};

interface CommandTotals {
  readonly scripts: number;
  readonly scriptUs: number;
  readonly all: number;
  readonly blocking: number;
}

const SCRIPT_COMMANDS = new Set(['evalsha', 'eval', 'evalsha_ro', 'eval_ro', 'fcall', 'fcall_ro']);

/** The admin client of a run: FLUSHALL, INFO, CONFIG RESETSTAT. Never used by a system under test. */
export class Probe {
  private readonly client: Redis;
  private valkeyPid?: Promise<number | undefined>;

  constructor(url: string) {
    this.client = new Redis(url, { maxRetriesPerRequest: 1 });
  }

  /** Deletes every key (between phases, with no system connected). */
  async flush(): Promise<void> {
    await this.client.flushall();
  }

  /** `used_memory` in bytes. */
  async usedMemory(): Promise<number> {
    return Number(parseInfo(await this.client.info('memory')).get('used_memory'));
  }

  /** The server's `valkey_version` (or `redis_version`). */
  async serverVersion(): Promise<string> {
    const info = parseInfo(await this.client.info('server'));
    return info.get('valkey_version') ?? info.get('redis_version') ?? 'unknown';
  }

  private async serverCpuUs(): Promise<number> {
    const info = parseInfo(await this.client.info('cpu'));
    return (Number(info.get('used_cpu_user')) + Number(info.get('used_cpu_sys'))) * 1e6;
  }

  private async commands(): Promise<CommandTotals> {
    const info = parseInfo(await this.client.info('commandstats'));
    let scripts = 0;
    let scriptUs = 0;
    let all = 0;
    let blocking = 0;
    for (const [key, value] of info) {
      if (!key.startsWith('cmdstat_')) continue;
      const name = key.slice('cmdstat_'.length);
      // Our own INFO and CONFIG calls are not part of the phase.
      if (name === 'info' || name === 'config') continue;
      const calls = Number(/calls=(\d+)/.exec(value)?.[1] ?? 0);
      all += calls;
      if (SCRIPT_COMMANDS.has(name)) {
        scripts += calls;
        scriptUs += Number(/usec=(\d+)/.exec(value)?.[1] ?? 0);
      }
      if (name.startsWith('bl') || name.startsWith('bz') || name.startsWith('br')) blocking += calls;
    }
    return { scripts, scriptUs, all, blocking };
  }

  /** The server's `process_id` (a local server: its CPU is read from `/proc`). */
  pid(): Promise<number | undefined> {
    this.valkeyPid ??= this.client.info('server').then((t) => {
      const pid = Number(parseInfo(t).get('process_id'));
      return Number.isInteger(pid) && pid > 0 ? pid : undefined;
    });
    return this.valkeyPid;
  }

  /**
   * Starts measuring: resets command stats, samples the CPU of both sides and of the machine,
   * starts the clock, and reads `mark` (e.g. jobs processed so far) at that instant.
   */
  async start(mark?: () => number): Promise<Measurement> {
    const pid = await this.pid();
    await this.client.config('RESETSTAT');
    const server0 = await this.serverCpuUs();
    const load0 = snapshot(pid);
    const client0 = process.cpuUsage();
    const t0 = performance.now();
    const startMark = mark?.() ?? 0;
    return {
      startMark,
      stop: async (jobs: number, extraClientUs = 0): Promise<PhaseCost> => {
        const seconds = (performance.now() - t0) / 1000;
        const c = process.cpuUsage(client0);
        const load = phaseLoad(load0, snapshot(pid), extraClientUs);
        const server = (await this.serverCpuUs()) - server0;
        const cmd = await this.commands();
        return {
          seconds,
          wallUsPerJob: (seconds * 1e6) / jobs,
          clientUsPerJob: (c.user + c.system + extraClientUs) / jobs,
          serverUsPerJob: server / jobs,
          scriptsPerJob: cmd.scripts / jobs,
          scriptUsPerJob: cmd.scriptUs / jobs,
          commandsPerJob: cmd.all / jobs,
          blockingPerJob: cmd.blocking / jobs,
          jobs,
          valkeyBusy: server / (seconds * 1e6),
          load,
        };
      },
    };
  }

  /** Per command name, the calls since the last `start()` (RESETSTAT), for the ceiling's mix. */
  async commandCalls(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const [key, value] of parseInfo(await this.client.info('commandstats'))) {
      if (key.startsWith('cmdstat_')) out.set(key.slice('cmdstat_'.length), Number(/calls=(\d+)/.exec(value)?.[1] ?? 0));
    }
    return out;
  }

  /** Loads a script (SCRIPT LOAD); returns its sha. */
  async loadScript(source: string): Promise<string> {
    return (await this.client.script('LOAD', source)) as string;
  }

  /** Runs one raw command (the ceiling's checks). */
  async call(command: string, ...args: (string | number)[]): Promise<unknown> {
    return this.client.call(command, ...args);
  }

  /**
   * Where the bytes of `queue` are, from `MEMORY USAGE` of each of its keys: the per-job rows
   * (keys ending in a job id) together, every other key by its kind, each as bytes per job.
   */
  async keyBreakdown(queue: string, jobs: number): Promise<string> {
    const sums = new Map<string, number>();
    let cursor = '0';
    do {
      const [next, keys] = await this.client.scan(cursor, 'MATCH', `*${queue}*`, 'COUNT', 1000);
      cursor = next;
      const sizes = await Promise.all(keys.map((k) => this.client.memory('USAGE', k, 'SAMPLES', '0')));
      keys.forEach((k, i) => {
        const kind = /:job:job[0-9A-Za-z]{11}$|:\d+$/.test(k) ? 'rows' : k.slice(k.lastIndexOf(':') + 1);
        sums.set(kind, (sums.get(kind) ?? 0) + Number(sizes[i] ?? 0));
      });
    } while (cursor !== '0');
    return [...sums]
      .sort((a, b) => b[1] - a[1])
      .map(([kind, bytes]) => `${kind} ${(bytes / jobs).toFixed(1)}`)
      .join(', ');
  }

  /** Closes the admin client. */
  async close(): Promise<void> {
    await this.client.quit();
  }
}
