import type { RegistryKind } from '../protocol/admin-wire.js';
import type { EchoMqConnection } from '../protocol/connection.js';
import { EchoMqError } from '../protocol/errors.js';
import { registryPage } from '../admin/registry.js';

/** One registry entry as a page shows it: its figures, or why they could not be read. */
export interface Row<T> {
  /** The queue, topic or namespace name. */
  readonly name: string;
  /** Its figures, when they were read. */
  readonly value?: T;
  /** The error code when they were not (e.g. `EMQ_WRONGTYPE` for a key of the wrong type). */
  readonly error?: string;
}

/** One page of a registry with each entry read on its own. */
export interface RowPage<T> {
  /** The rows, in name order. */
  readonly rows: Row<T>[];
  /** The name to page after, absent on the last page. */
  readonly next?: string;
}

/**
 * One page of a registry, each entry read by `read` on its own: one unreadable queue, topic or
 * namespace (a key of the wrong type, a permission refused) shows as a row with its error code
 * instead of failing the whole page. Bad input (`after`) still fails the page, with its code.
 */
export async function rowPage<T>(conn: EchoMqConnection, kind: RegistryKind, after: string | undefined, limit: number, read: (name: string) => Promise<T>): Promise<RowPage<T>> {
  const page = await registryPage(conn, kind, after, limit);
  const settled = await Promise.allSettled(page.names.map(read));
  const rows = settled.map((s, i): Row<T> => {
    if (s.status === 'fulfilled') return { name: page.names[i], value: s.value };
    if (!(s.reason instanceof EchoMqError) || s.reason.code === 'EMQ_UNAVAILABLE') throw s.reason;
    return { name: page.names[i], error: s.reason.code };
  });
  return { rows, next: page.next };
}
