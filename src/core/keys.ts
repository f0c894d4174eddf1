import { InvalidNameError, InvalidOptionError } from './errors.js';
import { assertBrandedId } from './ids.js';

/** Longest queue, topic or namespace name. */
export const MAX_NAME_LENGTH = 100;
const NAME_RE = /^[A-Za-z0-9_.-]+$/;

/** Throws `InvalidNameError` unless `name` is legal in the key grammar. */
export function assertName(name: unknown, what = 'queue'): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new InvalidNameError(`${what} name must be a non-empty string`);
  }
  if (name.length > MAX_NAME_LENGTH) {
    throw new InvalidNameError(`${what} name is ${name.length} characters, the limit is ${MAX_NAME_LENGTH}`);
  }
  if (!NAME_RE.test(name)) {
    throw new InvalidNameError(
      `${what} name ${JSON.stringify(name.slice(0, 40))} may hold only letters, digits, "_", "." and "-"`,
    );
  }
  // "." and ".." are path segments: a URL (the dashboard's) normalises them away, so such a queue
  // could be written and never reached. The Lua grammar still accepts them (docs/protocol.md §2).
  if (name === '.' || name === '..') {
    throw new InvalidNameError(`${what} name ${JSON.stringify(name)} is a path segment; "." and ".." are not names`);
  }
}

/** The per-queue key kinds of protocol v1. */
export type QueueKeyKind = 'meta' | 'pending' | 'scheduled' | 'active' | 'done' | 'dead' | 'cancelled' | 'wake' | 'data' | 'opts' | 'events' | 'outbox' | 'outdue' | 'schedules' | 'ticks' | 'levels' | 'parked' | 'fires';

/**
 * The keys of one queue. Every key carries the queue name as its hash tag, so all of them
 * answer one cluster slot. This is the only place queue keys are spelt.
 */
export class QueueKeys {
  readonly meta: string;
  readonly pending: string;
  readonly scheduled: string;
  readonly active: string;
  readonly done: string;
  readonly dead: string;
  readonly cancelled: string;
  readonly wake: string;
  /** Hash id → payload of every job the queue holds. */
  readonly data: string;
  /** Hash id → a job's own options, until its first claim. */
  readonly opts: string;
  /** Lifecycle events: the sharded channel, and the bounded stream of the same name. */
  readonly events: string;
  /** Prefix of job rows; a row is `jobPrefix + id`. */
  readonly jobPrefix: string;
  /** Flows: hash entry id → text of the cross-queue hand-offs this queue owes (also the relay's channel). */
  readonly outbox: string;
  /** Flows: zset entry id → due at (ms); a taken entry is due again when its relay lease lapses. */
  readonly outdue: string;
  /** Schedules: hash schedule name → spec text (docs/protocol.md §11). */
  readonly schedules: string;
  /** Schedules: zset schedule name → next tick (epoch ms, server clock). */
  readonly ticks: string;
  /** Schedules: hash schedule name → jobs its ticks wrote (counted for a spec's `limit`). */
  readonly fires: string;
  /** Priorities: zset of the levels 1..9 whose list (`pendingAt(p)`) holds jobs (score = level). */
  readonly levels: string;
  /** Parked consumers: zset `<lease ms>:<tag>` → registration end (a parked claim or park.lua; enqueue hands jobs off to them). */
  readonly parked: string;

  constructor(readonly queue: string) {
    assertName(queue, 'queue');
    const base = `emq:{${queue}}:`;
    this.meta = base + 'meta';
    this.pending = base + 'pending';
    this.scheduled = base + 'scheduled';
    this.active = base + 'active';
    this.done = base + 'done';
    this.dead = base + 'dead';
    this.cancelled = base + 'cancelled';
    this.wake = base + 'wake';
    this.data = base + 'data';
    this.opts = base + 'opts';
    this.events = base + 'events';
    this.jobPrefix = base + 'job:';
    this.outbox = base + 'outbox';
    this.outdue = base + 'outdue';
    this.schedules = base + 'schedules';
    this.ticks = base + 'ticks';
    this.fires = base + 'fires';
    this.levels = base + 'levels';
    this.parked = base + 'parked';
  }

  /** Parked consumers: the list consumer `tag` blocks on, where enqueue pushes a job it leased to it. */
  inbox(tag: string): string {
    if (!TAG_RE.test(tag)) throw new InvalidOptionError(`a consumer tag is 1..32 of A-Z a-z 0-9, got ${JSON.stringify(String(tag).slice(0, 40))}`);
    return this.pending.slice(0, -'pending'.length) + 'inbox:' + tag;
  }

  /** Fair lanes: the list of the pending ids of lane `lane` (key `group:<lane>`, the wire's name). */
  lane(lane: string): string {
    return `${this.pending.slice(0, -'pending'.length)}group:${lane}`;
  }

  /** Fair lanes: the ring (list, key `groups`, the wire's name) of lanes with pending work: lane names, `""` for `pending`. */
  get laneRing(): string {
    return this.pending.slice(0, -'pending'.length) + 'groups';
  }

  /** Priorities: the pending list of level `p` (0..9): `pending` for 0, else `pending:<p>`. */
  pendingAt(p: number): string {
    return p === 0 ? this.pending : `${this.pending}:${p}`;
  }

  /** Metrics (stats.lua): the hash of minute `minute` (floor(epoch s / 60)), kept 25 h after its last write. */
  statsMinute(minute: number): string {
    return `${this.pending.slice(0, -'pending'.length)}stats:m:${minute}`;
  }

  /** Metrics (stats.lua): the hourly rollup hash of hour `hour` (floor(minute / 60)), kept 15 days after its last write. */
  statsHour(hour: number): string {
    return `${this.pending.slice(0, -'pending'.length)}stats:h:${hour}`;
  }

  /** Business ids (docs/queue.md): hash business id → wire id, and wire id → business id. */
  get refs(): string {
    return this.jobPrefix.slice(0, -4) + 'refs';
  }

  /** The row (hash) of job `id`; validates the id. */
  job(id: string): string {
    assertBrandedId(id, 'job');
    return this.jobPrefix + id;
  }

  /**
   * The row of an id that came from a claim reply. Skips the client-side check (a BigInt decode,
   * costly per job on the hot path); the scripts still gate every id and check each row key.
   */
  claimedRow(id: string): string {
    return this.jobPrefix + id;
  }

  /**
   * The dedup key of business key `key` (`emq:{q}:key:<key>`, holding the id of the job that
   * took it); `key` must be 1..256 bytes without control characters (`InvalidOptionError`).
   */
  dedup(key: string): string {
    if (typeof key !== 'string' || key.length === 0 || Buffer.byteLength(key) > MAX_DEDUP_KEY_BYTES || CONTROL_RE.test(key)) {
      throw new InvalidOptionError(`a dedup key must be a string of 1..${MAX_DEDUP_KEY_BYTES} bytes without control characters, got ${JSON.stringify(String(key).slice(0, 40))}`);
    }
    return this.jobPrefix.slice(0, -4) + 'key:' + key;
  }
}

const TAG_RE = /^[A-Za-z0-9]{1,32}$/;

/** Longest business id (an `EnqueueOptions.id` that is not a branded id), in bytes. */
export const MAX_BUSINESS_ID_BYTES = 200;
const JOB_ID_FORM = /^job[0-9A-Za-z]{11}$/;

/**
 * True when `id` has the form of a branded job id (`job` and 11 base62 digits): such a string is
 * always taken as a wire id, never as a business id.
 */
export function hasJobIdForm(id: string): boolean {
  return JOB_ID_FORM.test(id);
}

/**
 * True when `ref` is a business id: 1..200 bytes, no control characters, not of the branded
 * form (docs/queue.md, business ids).
 */
export function isBusinessId(ref: unknown): ref is string {
  return typeof ref === 'string' && ref.length > 0 && Buffer.byteLength(ref) <= MAX_BUSINESS_ID_BYTES && !CONTROL_RE.test(ref) && !JOB_ID_FORM.test(ref);
}

/** Longest business key of a deduplicated enqueue, in bytes. */
export const MAX_DEDUP_KEY_BYTES = 256;
// eslint-disable-next-line no-control-regex
const CONTROL_RE = /[\x00-\x1f\x7f]/;

/**
 * The keys of one Bus topic. The topic name is the hash tag, so a topic lives in one slot. Kinds
 * never collide with a queue's kinds, so a queue and a topic may share a name.
 */
export class TopicKeys {
  /** Hash: `v` protocol version, retention policy fields. */
  readonly meta: string;
  /** Stream: the retained event log. */
  readonly log: string;
  /** Stream: the dead-letter log. */
  readonly dead: string;
  /** Zset: archive segment index (member `<firstEvtId>-<lastEvtId>`, score = first ms). */
  readonly archive: string;
  /** Prefix of archive segments; a segment is this prefix followed by its index member. */
  readonly segPrefix: string;
  /** Sharded pub/sub channel of the topic's fire-and-forget signals. */
  readonly signal: string;

  constructor(readonly topic: string) {
    assertName(topic, 'topic');
    const base = `emq:{${topic}}:bus:`;
    this.meta = base + 'meta';
    this.log = base + 'log';
    this.dead = base + 'dead';
    this.archive = base + 'archive';
    this.segPrefix = base + 'seg:';
    this.signal = base + 'signal';
  }
}

const topicCache = new Map<string, TopicKeys>();
/** The (memoised) keys of `topic`; validates the name. */
export function topicKeys(topic: string): TopicKeys {
  let k = topicCache.get(topic);
  if (!k) {
    k = new TopicKeys(topic);
    if (topicCache.size > 10_000) topicCache.clear();
    topicCache.set(topic, k);
  }
  return k;
}

/** Longest cache key (bytes of its UTF-16 text). */
export const MAX_CACHE_KEY_LENGTH = 512;
const CACHE_KEY_RE = /^[\x21-\x7a\x7c\x7e]+$/; // printable ASCII without space, `{` and `}`

/** Throws `InvalidNameError` unless `key` is a legal cache key. */
export function assertCacheKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_CACHE_KEY_LENGTH || !CACHE_KEY_RE.test(key)) {
    const shown = typeof key === 'string' ? JSON.stringify(key.slice(0, 40)) : typeof key;
    throw new InvalidNameError(
      `cache key ${shown} must be 1..${MAX_CACHE_KEY_LENGTH} printable ASCII characters without spaces or braces`,
    );
  }
}

/** True when `key` is a legal cache key. */
export function isCacheKey(key: unknown): key is string {
  return typeof key === 'string' && key.length > 0 && key.length <= MAX_CACHE_KEY_LENGTH && CACHE_KEY_RE.test(key);
}

/**
 * The keys of one cache namespace. Entries carry their own hash tag (`{c:<ns>:<key>}`), so a
 * namespace spreads across cluster slots; the namespace's own keys (invalidation log, tag index)
 * share the namespace tag.
 */
export class CacheKeys {
  /** Stream: the namespace's retained invalidation log. */
  readonly log: string;
  /** Sharded channel: invalidations signalled for speed. */
  readonly signal: string;

  constructor(readonly ns: string) {
    assertName(ns, 'cache namespace');
    this.log = `emq:{${ns}}:cache:log`;
    this.signal = `emq:{${ns}}:cache:signal`;
  }

  /** The L2 entry (hash) of `key`, in its own slot. */
  entry(key: string): string {
    assertCacheKey(key);
    return `emq:{c:${this.ns}:${key}}:entry`;
  }

  /** The cross-process fill lease of `key` (same slot as its entry). */
  lease(key: string): string {
    assertCacheKey(key);
    return `emq:{c:${this.ns}:${key}}:lease`;
  }

  /** The index of keys carrying `tag`: a zset of key → expiry ms (namespace slot). */
  tag(tag: string): string {
    assertCacheKey(tag);
    return `emq:{${this.ns}}:cache:tag:${tag}`;
  }

  /** The last invalidation version of `tag` (string, lives for the fence window; namespace slot). */
  mark(tag: string): string {
    assertCacheKey(tag);
    return `emq:{${this.ns}}:cache:mark:${tag}`;
  }
}

/**
 * The keys of one coordination name (docs/coordination.md): each name is its own hash tag
 * `co:<name>`, so the lease and the semaphore of one name share a slot and names spread across a
 * cluster. Neither key has a TTL: the lease's fence must outlive every holder.
 */
export class CoordKeys {
  /** Hash `owner`, `token`, `exp`, `fence`: the fenced lease (lease.lua). */
  readonly lease: string;
  /** Zset holder id → permit expiry (server ms): the counting semaphore (semaphore.lua). */
  readonly sem: string;

  constructor(readonly name: string, what = 'lease') {
    assertName(name, what);
    this.lease = `emq:{co:${name}}:lease`;
    this.sem = `emq:{co:${name}}:sem`;
  }
}

/** Cluster-wide keys, under the `{emq}` reserve tag. */
export const globalKeys = {
  /** Counter that spreads node-number claims. */
  nodeSeq: '{emq}:node-seq',
  /** Hash of node-number leases (no TTL): field = the number, value = `<owner> <expires-at ms>`. */
  nodes: '{emq}:nodes',
  /** Hash of process descriptions (node.lua's describing form): field = the node number, value = `<owner> <heartbeat ms> <info JSON>`. */
  procs: '{emq}:procs',
  /** Registry (zset, every score 0) of the queues processes announced (`announce.lua`). */
  queues: '{emq}:queues',
  /** Registry of the Bus topics processes announced. */
  topics: '{emq}:topics',
  /** Registry of the cache namespaces processes announced. */
  caches: '{emq}:caches',
} as const;

const cache = new Map<string, QueueKeys>();
/** The (memoised) keys of `queue`; validates the name. */
export function queueKeys(queue: string): QueueKeys {
  let k = cache.get(queue);
  if (!k) {
    k = new QueueKeys(queue);
    if (cache.size > 10_000) cache.clear();
    cache.set(queue, k);
  }
  return k;
}
