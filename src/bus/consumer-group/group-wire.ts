import type { ValkeyClient } from '../../core/connection/index.js';
import type { TopicKeys } from '../../core/keys.js';
import { PROTOCOL_VERSION, runScript, type ScriptClient } from '../../core/scripts.js';

/** One stream entry as a group read returns it; `payload` is null when the entry is gone. */
export interface GroupEntry {
  readonly streamId: string;
  readonly payload: string | null;
  /** The producer's traceparent (the entry's `tp` field), when it has one. */
  readonly tp?: string;
}

/** One row of the extended XPENDING form. */
export interface PendingRow {
  readonly streamId: string;
  readonly consumer: string;
  readonly idleMs: number;
  readonly deliveries: number;
}

type Raw = unknown;

const asText = (v: Raw): string => (typeof v === 'string' ? v : Buffer.isBuffer(v) ? v.toString('utf8') : String(v));

/** Parses a list of `[id, [field, value, …] | nil]` entries (indexed reads, one result array: this runs per entry read). */
export function parseEntries(list: Raw): GroupEntry[] {
  if (!Array.isArray(list)) return [];
  const out: GroupEntry[] = new Array<GroupEntry>(list.length);
  for (let k = 0; k < list.length; k++) {
    const e = list[k] as Raw[];
    const fields = e[1];
    let payload: string | null = null;
    let tp: string | undefined;
    if (Array.isArray(fields)) {
      payload = '';
      for (let i = 0; i < fields.length; i += 2) {
        const f = asText(fields[i]);
        if (f === 'p') payload = asText(fields[i + 1]);
        else if (f === 'tp') tp = asText(fields[i + 1]);
      }
    }
    out[k] = tp === undefined ? { streamId: asText(e[0]), payload } : { streamId: asText(e[0]), payload, tp };
  }
  return out;
}

/** Sends one command through the generic call path (typed replies are parsed here). */
export function cmd(client: ValkeyClient, name: string, args: (string | number)[]): Promise<Raw> {
  return client.call(name, args) as Promise<Raw>;
}

/** `XREADGROUP GROUP g c COUNT n [BLOCK ms] STREAMS log <from>`: the entries of the one stream. */
export async function readGroup(client: ValkeyClient, k: TopicKeys, group: string, consumer: string, count: number, from: string, blockMs?: number): Promise<GroupEntry[]> {
  return entriesOf(await cmd(client, 'XREADGROUP', readArgs(k, group, consumer, count, from, blockMs)));
}

/** The server ids of blocking connections, learned once per connection (forgotten when it closes). */
const serverIds = new WeakMap<ValkeyClient, number>();

/** The server id of `client`'s current connection, when a read on it has learned it. */
export function knownServerId(client: ValkeyClient): number | undefined {
  return serverIds.get(client);
}

/**
 * A blocking `readGroup` whose connection's server id is told to `onId` before the read blocks:
 * whoever holds the id can end the read early with `CLIENT UNBLOCK`, and the read then answers
 * what it has (nothing, or entries it was delivered, which are not lost in a closed connection).
 * The id is learned by `CLIENT ID` in one pipeline with the first read on a connection and kept
 * until that connection closes (a reconnect gets a new id), so later reads are one command.
 */
export async function readGroupUnblockable(client: ValkeyClient, k: TopicKeys, group: string, consumer: string, count: number, from: string, blockMs: number, onId: (id: number) => void): Promise<GroupEntry[]> {
  const known = serverIds.get(client);
  if (known !== undefined) {
    onId(known);
    return readGroup(client, k, group, consumer, count, from, blockMs);
  }
  const p = client.pipeline();
  p.client('ID', (err: Error | null | undefined, id?: unknown) => {
    if (err) return;
    if (!serverIds.has(client)) client.once('close', () => serverIds.delete(client));
    serverIds.set(client, Number(id));
    onId(Number(id));
  });
  p.call('XREADGROUP', readArgs(k, group, consumer, count, from, blockMs));
  const replies = await p.exec();
  const [err, reply] = replies?.[1] ?? [new Error('no reply to the group read'), null];
  if (err) throw err;
  return entriesOf(reply);
}

function readArgs(k: TopicKeys, group: string, consumer: string, count: number, from: string, blockMs?: number): (string | number)[] {
  const args: (string | number)[] = ['GROUP', group, consumer, 'COUNT', count];
  if (blockMs !== undefined) args.push('BLOCK', blockMs);
  args.push('STREAMS', k.log, from);
  return args;
}

function entriesOf(reply: Raw): GroupEntry[] {
  if (!Array.isArray(reply) || reply.length === 0) return [];
  return parseEntries((reply[0] as [Raw, Raw])[1]);
}

/** Creates the group; true when created, false when it existed (`BUSYGROUP`). */
export async function createGroup(client: ValkeyClient, k: TopicKeys, group: string, start: string): Promise<boolean> {
  try {
    await cmd(client, 'XGROUP', ['CREATE', k.log, group, start, 'MKSTREAM']);
    return true;
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('BUSYGROUP')) return false;
    throw err;
  }
}

/** Extended XPENDING: `[IDLE ms] start end count [consumer]`. */
export async function pending(client: ValkeyClient, k: TopicKeys, group: string, o: { idleMs?: number; start?: string; end?: string; count: number; consumer?: string }): Promise<PendingRow[]> {
  const args: (string | number)[] = [k.log, group];
  if (o.idleMs !== undefined) args.push('IDLE', o.idleMs);
  args.push(o.start ?? '-', o.end ?? '+', o.count);
  if (o.consumer !== undefined) args.push(o.consumer);
  const reply = await cmd(client, 'XPENDING', args);
  if (!Array.isArray(reply)) return [];
  return reply.map((r: Raw) => {
    const [id, c, idle, n] = r as Raw[];
    return { streamId: asText(id), consumer: asText(c), idleMs: Number(idle), deliveries: Number(n) };
  });
}

/** What `dead-letter.lua` did: 1 dead-lettered, 2 entry gone (acked, lost), 0 skipped. */
export interface DeadLetterReply {
  readonly status: 0 | 1 | 2;
  readonly deliveries: number;
}

/** Runs `dead-letter.lua` for one pending entry (see the script's header). */
export async function deadLetter(
  client: ScriptClient,
  k: TopicKeys,
  a: { group: string; consumer: string; streamId: string; eventId: string; error: string; minIdleMs: number; deadCap: number },
): Promise<DeadLetterReply> {
  const reply = (await runScript(client, 'dead-letter', [k.meta, k.log, k.dead], [PROTOCOL_VERSION, a.group, a.consumer, a.streamId, a.eventId, a.error, a.minIdleMs, a.deadCap])) as number[];
  return { status: Number(reply[0]) as 0 | 1 | 2, deliveries: Number(reply[1]) };
}

/** True for a `NOGROUP` reply (the log or the group no longer exists). */
export const isNoGroup = (err: unknown): boolean => err instanceof Error && /NOGROUP/.test(err.message);

/** `Name: message` of an error, at most 8 KiB. */
export const errorText = (err: unknown): string => (err instanceof Error ? `${err.name}: ${err.message}` : String(err)).slice(0, 8192);

/**
 * Orders two stream ids `<ms>-<seq>`. Ids as the server writes them (no leading zeros) compare
 * by the lengths of their parts, then as text: no allocation, as this runs once per dispatched
 * event. Anything else falls back to comparing the parts as BigInts.
 */
export function compareStreamIds(a: string, b: string): number {
  const da = a.indexOf('-');
  const db = b.indexOf('-');
  if (canonical(a, da) && canonical(b, db)) {
    if (da !== db) return da < db ? -1 : 1;
    const la = a.length - da;
    const lb = b.length - db;
    if (la !== lb) {
      // Same ms length: the ms parts decide as text, else the longer seq is the larger.
      for (let i = 0; i < da; i++) {
        const x = a.charCodeAt(i);
        const y = b.charCodeAt(i);
        if (x !== y) return x < y ? -1 : 1;
      }
      return la < lb ? -1 : 1;
    }
    return a === b ? 0 : a < b ? -1 : 1; // same layout: text order is numeric order
  }
  return compareSlow(a, b);
}

/** True when `id` is `<digits>-<digits>` (dash at `dash`) with no leading zero in either part. */
function canonical(id: string, dash: number): boolean {
  if (dash < 1 || dash === id.length - 1) return false;
  if (id.charCodeAt(0) === 48 && dash > 1) return false;
  if (id.charCodeAt(dash + 1) === 48 && id.length - dash > 2) return false;
  for (let i = 0; i < id.length; i++) {
    if (i === dash) continue;
    const c = id.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

function compareSlow(a: string, b: string): number {
  const [am, as] = a.split('-').map(BigInt);
  const [bm, bs] = b.split('-').map(BigInt);
  return am !== bm ? (am < bm ? -1 : 1) : as === bs ? 0 : as < bs ? -1 : 1;
}
