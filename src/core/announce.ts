import type { EchoMqConnection } from './connection/index.js';
import { adminWire, type RegistryKind } from './wire/index.js';

/** The names each connection has announced (or is announcing), per registry. */
const announced = new WeakMap<EchoMqConnection, Record<RegistryKind, Set<string>>>();

/**
 * Announces `name` in a registry once per connection (a producer's first enqueue or publish, a
 * consumer's start), in the background: the registry is for operators, so a failure (an ACL
 * without `{emq}:*`, an outage) never fails the caller's call; it is tried again next time.
 */
export function announce(conn: EchoMqConnection, kind: RegistryKind, name: string): void {
  let sets = announced.get(conn);
  if (!sets) {
    sets = { queues: new Set(), topics: new Set(), caches: new Set() };
    announced.set(conn, sets);
  }
  const set = sets[kind];
  if (set.has(name)) return;
  set.add(name);
  adminWire.announce(conn.scriptClient, kind, 'add', [name]).catch(() => set.delete(name));
}
