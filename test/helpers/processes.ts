import { readdirSync, readFileSync } from 'node:fs';

/** The `valkey-server` processes below `root` (default: this process), read from /proc (Linux). */
export function descendantServers(root = process.pid): number[] {
  const parent = new Map<number, number>();
  const comm = new Map<number, string>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      comm.set(Number(d), stat.slice(stat.indexOf('(') + 1, close));
      parent.set(Number(d), Number(stat.slice(close + 2).split(' ')[1]));
    } catch {
      /* gone meanwhile */
    }
  }
  const below = (pid: number): boolean => {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) if (p === root) return true;
    return false;
  };
  return [...comm].filter(([pid, name]) => name.startsWith('valkey-server') && below(pid)).map(([pid]) => pid);
}
