import { randomBytes } from 'node:crypto';
import { assertName } from '../core/keys.js';

/**
 * A queue (or topic, group, namespace) name no other test uses: `orders` → `orders-3f9a1c07b2`.
 * EchoMQ's key grammar has no prefix (`emq:{orders}:…` is the queue's keyspace, shared by every
 * process on the server), so tests sharing one Valkey isolate themselves by name.
 */
export function uniqueQueueName(base = 'q'): string {
  const name = `${base}-${randomBytes(5).toString('hex')}`;
  assertName(name, 'queue');
  return name;
}
