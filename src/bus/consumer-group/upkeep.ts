import type { ValkeyClient } from '../../core/connection/index.js';
import type { TopicKeys } from '../../core/keys.js';
import { eventIdOf } from '../../core/event-id.js';
import { cmd } from './group-wire.js';

type Raw = unknown;
/** A reply element as text. */
export const text = (v: Raw): string => (Buffer.isBuffer(v) ? v.toString('utf8') : String(v));

/** A flat `[field, value, …]` reply as a map. */
export function fields(row: Raw): Map<string, Raw> {
  const out = new Map<string, Raw>();
  if (Array.isArray(row)) for (let i = 0; i + 1 < row.length; i += 2) out.set(text(row[i]), row[i + 1]);
  return out;
}

/** What a member last saw of its group, so a vanished log can be reported with a count and a range. */
export interface GroupSnapshot {
  /** When it was taken (client clock, ms). */
  readonly at: number;
  /** Entries delivered and not acknowledged, and the oldest and newest of them (stream ids). */
  readonly pending: number;
  readonly firstPending?: string;
  readonly lastPending?: string;
  /** Entries not yet delivered to the group (`XINFO GROUPS` lag), or null when the server cannot tell. */
  readonly lag: number | null;
  /** The first undelivered entry and the newest entry of the log (stream ids), when there is one. */
  readonly firstUndelivered?: string;
  readonly lastEntry?: string;
}

/** Reads the group's pending summary, its lag and the log's ends: one pipeline, plus one read when needed. */
export async function snapshotGroup(client: ValkeyClient, k: TopicKeys, group: string): Promise<GroupSnapshot | undefined> {
  const [summary, groups, newest] = await Promise.all([
    cmd(client, 'XPENDING', [k.log, group]) as Promise<Raw[]>,
    cmd(client, 'XINFO', ['GROUPS', k.log]) as Promise<Raw[]>,
    cmd(client, 'XREVRANGE', [k.log, '+', '-', 'COUNT', 1]) as Promise<Raw[][]>,
  ]);
  const info = groups.map(fields).find((g) => text(g.get('name')) === group);
  if (!info) return undefined;
  const lagRaw = info.get('lag');
  const lag = lagRaw === null || lagRaw === undefined ? null : Number(lagRaw);
  const last = text(info.get('last-delivered-id'));
  let firstUndelivered: string | undefined;
  if (lag !== null && lag > 0) {
    const next = (await cmd(client, 'XRANGE', [k.log, `(${last}`, '+', 'COUNT', 1])) as Raw[][];
    if (next.length > 0) firstUndelivered = text(next[0][0]);
  }
  const pending = Number(summary[0]);
  return {
    at: Date.now(),
    pending,
    firstPending: pending > 0 ? text(summary[1]) : undefined,
    lastPending: pending > 0 ? text(summary[2]) : undefined,
    lag,
    firstUndelivered,
    lastEntry: newest.length > 0 ? text(newest[0][0]) : undefined,
  };
}

/** How many entries and which range (branded ids) a vanished log took with it, as far as known. */
export interface LossEstimate {
  readonly count?: number;
  readonly first?: string;
  readonly last?: string;
  readonly detail: string;
}

const brand = (s: string | undefined): string | undefined => {
  if (s === undefined) return undefined;
  try {
    return eventIdOf(s);
  } catch {
    return s;
  }
};

/** The loss a snapshot implies when the log or the group vanished after it was taken. */
export function estimateLoss(s: GroupSnapshot | undefined): LossEstimate {
  if (!s) return { detail: 'an unknown number of entries not yet handled are lost (the group was never inspected)' };
  const as = `as of ${new Date(s.at).toISOString()}, the last look at the group`;
  if (s.lag === null) {
    const first = brand(s.firstPending);
    const range = first ? ` from ${first}` : '';
    return { first, detail: `at least ${s.pending} entries not yet handled are lost${range}, and an unknown number of undelivered ones (${as})` };
  }
  const count = s.pending + s.lag;
  const first = brand(s.firstPending ?? s.firstUndelivered);
  const last = brand(s.lag > 0 ? s.lastEntry : s.lastPending);
  const range = count > 0 && first && last ? ` (${first} .. ${last})` : '';
  return { count, first, last, detail: `${count} entries not yet handled are lost${range}: ${s.pending} pending, ${s.lag} not yet delivered (${as})` };
}

/** One member in `XINFO CONSUMERS`. */
interface MemberInfo {
  readonly name: string;
  readonly pending: number;
  readonly idleMs: number;
}

/**
 * Removes members that are gone: no pending entries (their entries were reclaimed or
 * acknowledged) and idle at least `idleMs` (no read, claim or heartbeat for that long; a live
 * member reads at least once per BLOCK). At most `limit` per call; never `me`. Returns the
 * names removed and how many pending entries the server said each still had (normally 0: one
 * that acquired entries between the look and the removal loses them from the pending list).
 */
export async function forgetGone(client: ValkeyClient, k: TopicKeys, group: string, me: string, idleMs: number, limit = 10): Promise<[string, number][]> {
  const rows = (await cmd(client, 'XINFO', ['CONSUMERS', k.log, group])) as Raw[];
  const members: MemberInfo[] = rows.map(fields).map((f) => ({ name: text(f.get('name')), pending: Number(f.get('pending')), idleMs: Number(f.get('idle')) }));
  const gone = members.filter((m) => m.name !== me && m.pending === 0 && m.idleMs >= idleMs).slice(0, limit);
  const out: [string, number][] = [];
  for (const m of gone) out.push([m.name, Number(await cmd(client, 'XGROUP', ['DELCONSUMER', k.log, group, m.name]))]);
  return out;
}
