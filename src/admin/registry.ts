import type { EchoMqConnection } from '../core/connection/index.js';
import { adminWire, type RegistryKind } from '../core/wire/index.js';
import { NotFoundError } from '../core/errors.js';
import { describeError, fromReplyError } from '../core/reply-errors.js';
import { assertName, globalKeys } from '../core/keys.js';

/** One page of a registry, in name order: names after `after` (exclusive), at most `limit`. */
export async function registryPage(conn: EchoMqConnection, kind: RegistryKind, after: string | undefined, limit: number): Promise<{ names: string[]; next?: string }> {
  if (after !== undefined) assertName(after, kind.slice(0, -1));
  try {
    const names = await conn.client.zrangebylex(globalKeys[kind], after === undefined ? '-' : `(${after}`, '+', 'LIMIT', 0, limit + 1);
    const more = names.length > limit;
    if (more) names.length = limit;
    return { names, next: more ? names[names.length - 1] : undefined };
  } catch (err) {
    throw fromReplyError(err);
  }
}

/**
 * Reads one item of a registry page; an item whose keys cannot be read (a key of another type,
 * written by hand) does not fail the page: it is `fallback` with the error's one-line text.
 */
export async function pageItem<T extends object>(read: () => Promise<T>, fallback: T): Promise<T & { readonly error?: string }> {
  try {
    return await read();
  } catch (err) {
    return { ...fallback, error: describeError(err) };
  }
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
