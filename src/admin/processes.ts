import type { EchoMqConnection, ProcessGroup, ProcessInfo, ProcessQueue } from '../core/connection/index.js';
import { describeError, fromReplyError } from '../core/reply-errors.js';
import { globalKeys } from '../core/keys.js';
import { logOnce } from './registry.js';

/**
 * How a process entry reads: `live` (its node lease is held by the owner that described it),
 * `gone` (the lease is over or another owner holds the number: the process stopped or crashed,
 * and a later claim prunes the entry), `unreadable` (planted or malformed data).
 */
export type ProcessState = 'live' | 'gone' | 'unreadable';

/** One process as the operator's processes view shows it (docs/admin.md "Processes"). */
export interface ProcessView {
  /** The node number it holds (or held). */
  readonly node: number;
  /** How the entry reads. */
  readonly state: ProcessState;
  /** The owner token of its lease (absent when unreadable). */
  readonly owner?: string;
  /** Its description; absent for a live lease of a process that does not describe itself (an older runtime). */
  readonly info?: ProcessInfo;
  /** Its last renewal (the server clock). */
  readonly heartbeatAt?: Date;
  /** When its node lease runs out (the server clock); absent when the number is free. */
  readonly leaseExpiresAt?: Date;
  /** With `unreadable`: why, as `EMQ_<CODE> message` or a short text. */
  readonly error?: string;
  /** With `unreadable`: the field of `{emq}:procs` or `{emq}:nodes` as stored (for finding it by hand). */
  readonly field?: string;
}

/** The processes view: every described or leased number, in node order. */
export interface ProcessList {
  /** The server clock when read. */
  readonly now: Date;
  /** The entries in node-number order (filter on `state`); unreadable ones without a number first. */
  readonly items: ProcessView[];
  /** How many entries are live. */
  readonly live: number;
  /** How many entries are gone (lease over or taken by another owner). */
  readonly gone: number;
  /** How many entries could not be read (each carries `error`). */
  readonly unreadable: number;
  /** A whole key could not be read (e.g. `{emq}:procs` is not a hash): `EMQ_<CODE> message`. */
  readonly error?: string;
}

const LEASE_RE = /^(\S+) (\d{1,16})$/;
const PROC_RE = /^(\S+) (\d{1,16}) (\{.*\})$/s;
const isInt = (v: unknown): v is number => Number.isSafeInteger(v);
const isText = (v: unknown): v is string => typeof v === 'string' && v.length <= 8192;

/** A list of the description, checked item by item (undefined when any item is malformed). */
function list<T>(v: unknown, item: (x: Record<string, unknown>) => T | undefined): T[] | undefined {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.length > 10_000) return undefined;
  const out: T[] = [];
  for (const x of v) {
    const t = x !== null && typeof x === 'object' && !Array.isArray(x) ? item(x as Record<string, unknown>) : undefined;
    if (t === undefined) return undefined;
    out.push(t);
  }
  return out;
}

/** Parses a description (docs/protocol.md §1); undefined when it is not one. Unknown fields are ignored. */
export function parseProcessInfo(text: string): ProcessInfo | undefined {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return undefined;
  const r = o as Record<string, unknown>;
  if (!isText(r.host) || !isInt(r.pid) || !isText(r.runtime) || !isText(r.version) || !isInt(r.started)) return undefined;
  const queues = list<ProcessQueue>(r.queues, (x) => (isText(x.name) && isInt(x.concurrency) && isInt(x.active) ? { name: x.name, concurrency: x.concurrency, active: x.active } : undefined));
  const groups = list<ProcessGroup>(r.groups, (x) =>
    isText(x.topic) && isText(x.group) && isText(x.consumer) && isInt(x.concurrency) ? { topic: x.topic, group: x.group, consumer: x.consumer, concurrency: x.concurrency } : undefined,
  );
  const roles = r.roles === undefined ? [] : Array.isArray(r.roles) && r.roles.every(isText) ? (r.roles as string[]) : undefined;
  if (!queues || !groups || !roles) return undefined;
  return { host: r.host, pid: r.pid, runtime: r.runtime, version: r.version, started: r.started, queues, groups, roles, ...(r.truncated === true ? { truncated: true } : {}) };
}

/** A node number field (`0`..`1023`, decimal, no leading zero), or undefined. */
function nodeNumber(field: string): number | undefined {
  return /^(0|[1-9]\d{0,3})$/.test(field) && Number(field) <= 1023 ? Number(field) : undefined;
}

/** Flat HGETALL reply → entries; a key of another type → its error text. */
async function readHash(conn: EchoMqConnection, key: string): Promise<{ entries: [string, string][]; error?: string }> {
  try {
    const flat = (await conn.client.call('HGETALL', key)) as string[];
    const entries: [string, string][] = [];
    for (let i = 0; i < flat.length; i += 2) entries.push([flat[i], flat[i + 1]]);
    return { entries };
  } catch (err) {
    const e = fromReplyError(err);
    if (e.code !== 'EMQ_WRONGTYPE') throw e;
    return { entries: [], error: `${describeError(e)} (${key})` };
  }
}

/**
 * Reads the processes view: the node leases (`{emq}:nodes`), the descriptions the processes send
 * with their renewals (`{emq}:procs`) and the server clock, with plain reads only (HGETALL, TIME:
 * a monitoring user's grant). A description whose lease is over or held by another owner is
 * `gone`, never live; a malformed entry is `unreadable` (logged once), never a failure.
 */
export async function readProcesses(conn: EchoMqConnection): Promise<ProcessList> {
  let secs: string, micros: string;
  try {
    [secs, micros] = (await conn.client.call('TIME')) as [string, string];
  } catch (err) {
    throw fromReplyError(err);
  }
  const now = Number(secs) * 1000 + Math.floor(Number(micros) / 1000);
  const [nodes, procs] = await Promise.all([readHash(conn, globalKeys.nodes), readHash(conn, globalKeys.procs)]);
  const items: ProcessView[] = [];
  const leases = new Map<number, { owner: string; until: number }>();
  const bad = (field: string, error: string, node = -1): void => {
    logOnce(conn, `procs\0${field}\0${error}`, `EchoMQ: the process entry ${JSON.stringify(field.slice(0, 40))} is unreadable: ${error}`);
    items.push({ node, state: 'unreadable', field, error });
  };
  for (const [field, value] of nodes.entries) {
    const n = nodeNumber(field);
    const m = LEASE_RE.exec(value);
    if (n === undefined || !m) bad(field, `malformed node lease ${JSON.stringify(value.slice(0, 80))} in ${globalKeys.nodes}`, n);
    else leases.set(n, { owner: m[1], until: Number(m[2]) });
  }
  const described = new Set<number>();
  for (const [field, value] of procs.entries) {
    const n = nodeNumber(field);
    const m = PROC_RE.exec(value);
    const info = m ? parseProcessInfo(m[3]) : undefined;
    if (n === undefined || !m || !info) {
      bad(field, n === undefined ? `not a node number in ${globalKeys.procs}` : `malformed process description in ${globalKeys.procs}`, n);
      continue;
    }
    const lease = leases.get(n);
    const live = lease !== undefined && lease.owner === m[1] && lease.until > now;
    if (live) described.add(n);
    items.push({ node: n, state: live ? 'live' : 'gone', owner: m[1], info, heartbeatAt: new Date(Number(m[2])), ...(live ? { leaseExpiresAt: new Date(lease.until) } : {}) });
  }
  // A live lease with no description: a process of a runtime that does not describe itself.
  for (const [n, lease] of leases) {
    if (!described.has(n) && lease.until > now) items.push({ node: n, state: 'live', owner: lease.owner, leaseExpiresAt: new Date(lease.until) });
  }
  items.sort((a, b) => a.node - b.node);
  const count = (s: ProcessState) => items.filter((i) => i.state === s).length;
  const error = [nodes.error, procs.error].filter((e) => e !== undefined).join('; ');
  return { now: new Date(now), items, live: count('live'), gone: count('gone'), unreadable: count('unreadable') + (error ? 1 : 0), ...(error ? { error } : {}) };
}
