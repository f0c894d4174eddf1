import type { ValkeyClient } from '../core/connection/index.js';
import type { TopicKeys } from '../core/keys.js';
import { streamIdOf } from '../core/event-id.js';
import { compareStreamIds, streamMs } from '../core/stream-id.js';

/** One log or archive entry on the wire: its stream id and its payload (JSON text). */
export type RawEntry = readonly [id: string, payload: string];

/** An archive segment's index member, parsed: the stream ids of its first and last entries. */
export interface SegmentRef {
  readonly member: string;
  readonly first: string;
  readonly last: string;
}

/** A range of stream ids; each end inclusive unless marked open. */
export interface IdRange {
  readonly lo: string;
  readonly loOpen: boolean;
  readonly hi: string;
  readonly hiOpen: boolean;
}

const MEMBER_RE = /^(evt[0-9A-Za-z]{11})-(evt[0-9A-Za-z]{11})$/;
const PAGE = 100;

/** Parses an index member `<firstEvtId>-<lastEvtId>`; undefined for a foreign or malformed one. */
export function parseMember(member: string): SegmentRef | undefined {
  const m = MEMBER_RE.exec(member);
  if (!m) return undefined;
  try {
    return { member, first: streamIdOf(m[1]), last: streamIdOf(m[2]) };
  } catch {
    return undefined;
  }
}

/** True when `id` lies in `r`. */
export function inRange(id: string, r: IdRange): boolean {
  const a = compareStreamIds(id, r.lo);
  if (a < 0 || (a === 0 && r.loOpen)) return false;
  const b = compareStreamIds(id, r.hi);
  return !(b > 0 || (b === 0 && r.hiOpen));
}

/**
 * The last few segments one replay read (member → entries). A segment never changes once
 * written, so a replay reads each one once however small its batches.
 */
export class SegmentCache {
  private readonly map = new Map<string, RawEntry[]>();
  get(member: string): RawEntry[] | undefined {
    return this.map.get(member);
  }
  set(member: string, entries: RawEntry[]): void {
    this.map.set(member, entries);
    if (this.map.size > 4) this.map.delete(this.map.keys().next().value as string);
  }
}

/** The entries of one segment; empty when it expired meanwhile or is not a segment. */
async function readSegment(client: ValkeyClient, k: TopicKeys, member: string, cache: SegmentCache): Promise<RawEntry[]> {
  const hit = cache.get(member);
  if (hit) return hit;
  const entries = await fetchSegment(client, k, member);
  cache.set(member, entries);
  return entries;
}

async function fetchSegment(client: ValkeyClient, k: TopicKeys, member: string): Promise<RawEntry[]> {
  const text = await client.get(k.segPrefix + member);
  if (text === null) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  return parsed.filter((e: unknown): e is [string, string] => Array.isArray(e) && typeof e[0] === 'string' && typeof e[1] === 'string');
}

/** Pairs a WITHSCORES reply into [member, score]. */
function pairs(flat: string[]): [string, number][] {
  const out: [string, number][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i], Number(flat[i + 1])]);
  return out;
}

/**
 * Walks the index in log order (asc) or newest first (desc), from the score `start`, yielding each
 * member once. Pages continue from the last score seen (not by offset), so segments deleted by
 * expiry or added by a trim meanwhile never make the walk skip one.
 */
async function* walk(client: ValkeyClient, k: TopicKeys, start: number, order: 'asc' | 'desc'): AsyncGenerator<SegmentRef> {
  const seen = new Set<string>();
  let score = start;
  let offset = 0;
  for (;;) {
    const flat =
      order === 'asc'
        ? await client.zrangebyscore(k.archive, score, '+inf', 'WITHSCORES', 'LIMIT', offset, PAGE)
        : await client.zrevrangebyscore(k.archive, score, '-inf', 'WITHSCORES', 'LIMIT', offset, PAGE);
    const page = pairs(flat);
    if (page.length === 0) return;
    for (const [member] of page) {
      if (seen.has(member)) continue;
      seen.add(member);
      const ref = parseMember(member);
      if (ref) yield ref;
    }
    const last = page[page.length - 1][1];
    if (page.length < PAGE) return;
    // A full page of one score: step over it by offset; otherwise restart from the last score.
    if (last === score) offset += PAGE;
    else {
      score = last;
      offset = 0;
    }
  }
}

/** Archived entries in `r`, in log order, at most `max`. */
export async function archiveAsc(client: ValkeyClient, k: TopicKeys, r: IdRange, max: number, cache: SegmentCache): Promise<RawEntry[]> {
  const out: RawEntry[] = [];
  const loMs = streamMs(r.lo);
  // The last segment that starts before lo's millisecond may reach into the range.
  const before = await client.zrevrangebyscore(k.archive, `(${loMs}`, '-inf', 'LIMIT', 0, 1);
  const refs = async function* (): AsyncGenerator<SegmentRef> {
    const pre = before.length ? parseMember(before[0]) : undefined;
    if (pre) yield pre;
    yield* walk(client, k, loMs, 'asc');
  };
  for await (const ref of refs()) {
    if (compareStreamIds(ref.last, r.lo) < 0) continue;
    const h = compareStreamIds(ref.first, r.hi);
    if (h > 0 || (h === 0 && r.hiOpen)) break;
    for (const e of await readSegment(client, k, ref.member, cache)) {
      if (!inRange(e[0], r)) continue;
      out.push(e);
      if (out.length >= max) return out;
    }
  }
  return out;
}

/** Archived entries in `r`, newest first, at most `max`. */
export async function archiveDesc(client: ValkeyClient, k: TopicKeys, r: IdRange, max: number, cache: SegmentCache): Promise<RawEntry[]> {
  const out: RawEntry[] = [];
  for await (const ref of walk(client, k, streamMs(r.hi), 'desc')) {
    if (compareStreamIds(ref.first, r.hi) > 0) continue;
    const l = compareStreamIds(ref.last, r.lo);
    if (l < 0 || (l === 0 && r.loOpen)) break;
    const entries = await readSegment(client, k, ref.member, cache);
    for (let i = entries.length - 1; i >= 0; i--) {
      if (!inRange(entries[i][0], r)) continue;
      out.push(entries[i]);
      if (out.length >= max) return out;
    }
  }
  return out;
}

/** The stream id of the newest archived entry, or undefined when the archive is empty. */
export function newestArchived(newestMember: readonly string[]): string | undefined {
  return newestMember.length ? parseMember(newestMember[0])?.last : undefined;
}
