/**
 * Measurement around a phase: wall time, this process's CPU, Valkey's CPU and command counts
 * (from `INFO cpu` / `INFO commandstats`), and Valkey's `used_memory`.
 */
import { Redis } from 'iovalkey';

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
}

/** A started measurement; `stop()` ends it. */
export interface Measurement {
  /** Ends the measurement; `extraClientUs` adds CPU spent in child processes. */
  stop(jobs: number, extraClientUs?: number): Promise<PhaseCost>;
}

const parseInfo = (text: string): Map<string, string> => {
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

  /** Starts measuring: resets command stats, samples the CPU of both sides, starts the clock. */
  async start(): Promise<Measurement> {
    await this.client.config('RESETSTAT');
    const server0 = await this.serverCpuUs();
    const client0 = process.cpuUsage();
    const t0 = performance.now();
    return {
      stop: async (jobs: number, extraClientUs = 0): Promise<PhaseCost> => {
        const seconds = (performance.now() - t0) / 1000;
        const c = process.cpuUsage(client0);
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
        };
      },
    };
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
