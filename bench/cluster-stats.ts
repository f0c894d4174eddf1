/**
 * Pure readings of the replies the cluster rows take from every node (`INFO commandstats`,
 * `INFO errorstats`, `INFO cpu`, `CLIENT LIST`), and the per-repetition ratios against standalone.
 */
import { parseInfo } from './probe.js';

/** The bench's own admin commands (never the system's): left out of the command counts. */
const ADMIN_COMMANDS = /^(info|config|config\|.*|client\|list|flushall)$/;

/** Every command call in an `INFO commandstats` reply, the bench's own admin calls left out. */
export function commandCalls(commandstats: string): number {
  let all = 0;
  for (const [key, value] of parseInfo(commandstats)) {
    if (!key.startsWith('cmdstat_')) continue;
    if (ADMIN_COMMANDS.test(key.slice('cmdstat_'.length))) continue;
    all += Number(/calls=(\d+)/.exec(value)?.[1] ?? 0);
  }
  return all;
}

/** The script calls (`EVALSHA` and `EVAL`) in one node's `INFO commandstats` text. */
export function scriptCalls(commandstats: string): number {
  let n = 0;
  for (const [key, value] of parseInfo(commandstats)) if (key === 'cmdstat_evalsha' || key === 'cmdstat_eval') n += Number(/calls=(\d+)/.exec(value)?.[1] ?? 0);
  return n;
}

/** The redirections a node answered, from `INFO errorstats` (`errorstat_MOVED`, `errorstat_ASK`). */
export function redirections(errorstats: string): { moved: number; ask: number } {
  const info = parseInfo(errorstats);
  const count = (k: string): number => Number(/count=(\d+)/.exec(info.get(k) ?? '')?.[1] ?? 0);
  return { moved: count('errorstat_MOVED'), ask: count('errorstat_ASK') };
}

/** The server's CPU (user + sys) in µs, from `INFO cpu`. */
export function cpuUs(cpu: string): number {
  const info = parseInfo(cpu);
  return (Number(info.get('used_cpu_user')) + Number(info.get('used_cpu_sys'))) * 1e6;
}

/** The client connections a `CLIENT LIST` reply lists, those named in `except` (by `name=`) left out. */
export function clientCount(list: string, except: readonly string[] = []): number {
  return list.split('\n').filter((line) => line.startsWith('id=') && !except.includes(/ name=(\S*)/.exec(line)?.[1] ?? '')).length;
}

/**
 * The per-repetition ratios `value(rep) / base(rep)` over the repetitions both measured (e.g. a
 * cluster's cost per job over standalone's in the same repetition).
 */
export function perRepRatios(values: ReadonlyMap<number, number>, base: ReadonlyMap<number, number>): number[] {
  const out: number[] = [];
  for (const [rep, v] of [...values].sort((a, b) => a[0] - b[0])) {
    const b = base.get(rep);
    if (b !== undefined && b > 0) out.push(v / b);
  }
  return out;
}

/**
 * The connections of a `CLIENT LIST` reply by name, the digits of a name folded to `N` (so
 * `emq:cmd:1` and `emq:cmd:2` count as two of `emq:cmd:N`), those in `except` left out: e.g.
 * `{ 'emq:cmd:N': 3, 'emq:blk:N': 3 }`. Unnamed connections count under `(none)`.
 */
export function clientNames(list: string, except: readonly string[] = []): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of list.split('\n')) {
    if (!line.startsWith('id=')) continue;
    const name = / name=(\S*)/.exec(line)?.[1] ?? '';
    if (except.includes(name)) continue;
    const key = name === '' ? '(none)' : name.replace(/\d+/g, 'N');
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}
