import { intIn, keySet, refuseUnknownKeys } from '../core/known-keys.js';
import { assertName } from '../core/keys.js';
import { COORD_TTL_MS } from '../core/wire/index.js';

/** Metadata key written by `@Leader`. */
export const LEADER_METADATA = 'echomq:leader';

/** Options of `@Leader(role, options)`. */
export interface LeaderOptions {
  /**
   * The leadership lease in ms (100..3600000, default 5000): renewed every ttl/3 while this
   * process leads; after a crash another instance takes the role within about ttl + its poll
   * (min(ttl/4, 500 ms)).
   */
  readonly ttlMs?: number;
}

/** What `@Leader` records on a method. */
export interface LeaderMetadata {
  readonly role: string;
  readonly options: LeaderOptions;
}

const LEADER_KEYS = keySet<LeaderOptions>({ ttlMs: true });

/** Refuses unknown keys and an out-of-range `ttlMs` (`InvalidOptionError`, EMQ_BAD_OPTION). */
export function checkLeaderOptions(o: LeaderOptions, what: string): void {
  refuseUnknownKeys(o, LEADER_KEYS, what);
  if (o.ttlMs !== undefined) intIn(o.ttlMs, COORD_TTL_MS.min, COORD_TTL_MS.max, `${what}: ttlMs`);
}

/**
 * Marks a provider method `(term: LeaderTerm) => Promise<void>` as the work of leader role
 * `role`: at most one process of the app's instances runs it at a time. The module campaigns for
 * the role from bootstrap on and calls the method with a `LeaderTerm` each time this process wins;
 * the method should run until `term.signal` aborts (returning early keeps the leadership until
 * shutdown or loss; `term.resign()` gives it up). A method that throws is logged and its term
 * resigned; the campaign goes on. The role is checked now (EMQ_BAD_NAME), the options too
 * (unknown keys, ranges: EMQ_BAD_OPTION); two methods on one role are refused at module init.
 * Only writes metadata.
 */
export function Leader(role: string, options: LeaderOptions = {}): MethodDecorator {
  assertName(role, 'leader role');
  checkLeaderOptions(options, `@Leader("${role}") options`);
  const meta: LeaderMetadata = { role, options: { ...options } };
  return (_target, _key, descriptor) => {
    Reflect.defineMetadata(LEADER_METADATA, meta, descriptor.value as object);
    return descriptor;
  };
}

/** Reads `@Leader` metadata from a method, if any. */
export function getLeaderMetadata(method: unknown): LeaderMetadata | undefined {
  if (typeof method !== 'function') return undefined;
  return Reflect.getMetadata(LEADER_METADATA, method) as LeaderMetadata | undefined;
}
