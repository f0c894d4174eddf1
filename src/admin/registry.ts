import type { EchoMqConnection } from '../core/connection/index.js';
import type { RegistryKind } from '../core/wire/index.js';
import { InvalidNameError, NotFoundError } from '../core/errors.js';
import { describeError, fromReplyError } from '../core/reply-errors.js';
import { assertName, globalKeys } from '../core/keys.js';

/** Why a registry entry is shown without its figures: a name the key grammar refuses, or keys that cannot be read. */
export type EntryProblem = 'invalid name' | 'unreadable';

/** What a registry page item carries when it could not be read (its figures are then 0). */
export interface EntryError {
  /** The error's one-line text (`EMQ_<CODE> message`). */
  readonly error?: string;
  /** Which kind of trouble: `invalid name` (planted by hand) or `unreadable` (a key of another type, …). */
  readonly problem?: EntryProblem;
}

/** The longest `after` a registry page accepts (a position in name order, not a name: a planted entry may be one). */
export const MAX_AFTER_LENGTH = 65_536;

/** One page of a registry, in name order: names after `after` (exclusive), at most `limit`. */
export async function registryPage(conn: EchoMqConnection, kind: RegistryKind, after: string | undefined, limit: number): Promise<{ names: string[]; next?: string }> {
  // `after` is where the previous page ended: any entry of the registry, a malformed one included.
  if (after !== undefined && (typeof after !== 'string' || after.length === 0 || after.length > MAX_AFTER_LENGTH)) {
    throw new InvalidNameError(`after must be a non-empty string of at most ${MAX_AFTER_LENGTH} characters`);
  }
  try {
    const names = await conn.client.zrangebylex(globalKeys[kind], after === undefined ? '-' : `(${after}`, '+', 'LIMIT', 0, limit + 1);
    const more = names.length > limit;
    if (more) names.length = limit;
    return { names, next: more ? names[names.length - 1] : undefined };
  } catch (err) {
    throw fromReplyError(err);
  }
}

/** The `EMQ_BAD_NAME …` line of a registry entry the key grammar refuses, or undefined for a legal name. */
export function nameProblem(name: string, what: string): string | undefined {
  try {
    assertName(name, what);
    return undefined;
  } catch (err) {
    return describeError(err);
  }
}

/** The entries each connection already logged as unreadable (at most `MAX_LOGGED`, then no more). */
const logged = new WeakMap<EchoMqConnection, Set<string>>();
const MAX_LOGGED = 1000;

/** Logs an unreadable registry entry once per connection, through the connection's logger. */
export function logOnce(conn: EchoMqConnection, key: string, message: string): void {
  let seen = logged.get(conn);
  if (!seen) logged.set(conn, (seen = new Set()));
  if (seen.has(key) || seen.size >= MAX_LOGGED) return;
  seen.add(key);
  try {
    conn.logger.warn(message);
  } catch {
    // a logger that throws must not fail a read
  }
}

/**
 * Reads every entry of a registry page on its own: an entry whose name the key grammar refuses
 * (written by hand: `ZADD {emq}:queues 0 'bad name!'`) is never read and becomes `fallback` with
 * `problem: 'invalid name'`; one whose keys cannot be read (a key of another type, …) becomes
 * `fallback` with `problem: 'unreadable'`. Either carries the error's one-line text, is logged
 * once per connection, and never fails the page (nothing rejects unobserved: `read` runs only on
 * a legal name, inside a try). Resolves to the items and how many of them could not be read.
 */
export async function readEntries<T extends { readonly name: string }>(
  conn: EchoMqConnection,
  kind: RegistryKind,
  names: readonly string[],
  read: (name: string) => Promise<T>,
  fallback: (name: string) => T,
): Promise<{ items: (T & EntryError)[]; unreadable: number }> {
  const what = kind.slice(0, -1).replace(/^cache$/, 'cache namespace');
  const items = await Promise.all(
    names.map(async (name): Promise<T & EntryError> => {
      const bad = nameProblem(name, what);
      const problem: EntryProblem = bad ? 'invalid name' : 'unreadable';
      let error = bad;
      if (!bad) {
        try {
          return await read(name);
        } catch (err) {
          error = describeError(fromReplyError(err));
        }
      }
      logOnce(conn, `${kind}\0${name}\0${error}`, `EchoMQ: the ${what} registry entry ${JSON.stringify(name.slice(0, 120))} is shown without figures (${problem}): ${error}`);
      return { ...fallback(name), error, problem };
    }),
  );
  return { items, unreadable: items.filter((i) => i.problem !== undefined).length };
}

/** True when `name` is in the registry. */
export async function registered(conn: EchoMqConnection, kind: RegistryKind, name: string): Promise<boolean> {
  try {
    return (await conn.client.zscore(globalKeys[kind], name)) !== null;
  } catch (err) {
    throw fromReplyError(err);
  }
}

/**
 * Throws `NotFoundError` (EMQ_NOT_FOUND) unless `name` is in its registry or one of `dataKeys`
 * exists: two reads, no SCAN. `what` names the kind in the message ("queue", "topic", …).
 */
export async function assertKnown(conn: EchoMqConnection, kind: RegistryKind, name: string, dataKeys: readonly string[], what: string): Promise<void> {
  let known: boolean;
  try {
    const [inRegistry, present] = await Promise.all([registered(conn, kind, name), conn.client.exists(...dataKeys)]);
    known = inRegistry || present > 0;
  } catch (err) {
    throw fromReplyError(err);
  }
  if (!known) throw new NotFoundError(`no ${what} named ${name} (none announced it and it holds no data)`);
}
