import { Cluster, type Redis } from 'iovalkey';
import { EchoMqError, EvictionPolicyError, describeError } from './errors.js';

/** Where a connection reports what it cannot throw to anyone. */
export interface ConnectionLogger {
  warn(message: string): void;
}

/** The default logger: a process warning (printed once per message by Node). */
export const processWarnings: ConnectionLogger = {
  warn: (message) => process.emitWarning(message, { code: 'EMQ_CONNECTION' }),
};

/** What `volatile-*` may evict: the keys EchoMQ writes with a TTL (queue and bus keys carry none). */
export const VOLATILE_VICTIMS = 'cache entries, cache tombstones, cache fill leases and cache tag indexes';

/**
 * The verdict on one server's `maxmemory-policy`: `refuse` for `allkeys-*` (any key may be evicted:
 * queue rows, the fencing counter, the bus log), `warn` for `volatile-*`, `ok` otherwise.
 */
export function judgePolicy(policy: string): 'ok' | 'warn' | 'refuse' {
  if (policy.startsWith('allkeys-')) return 'refuse';
  if (policy.startsWith('volatile-')) return 'warn';
  return 'ok';
}

/** Reads `maxmemory_policy` from `INFO memory` (which an ACL user with `+info` may run; `CONFIG GET` is often denied). */
export async function readPolicy(client: Redis): Promise<string> {
  const info = await client.info('memory');
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1] ?? 'unknown';
}

/**
 * Checks the eviction policy of every primary `client` talks to. `allkeys-*` is refused with
 * `EvictionPolicyError` (EMQ_EVICTION_POLICY) unless `allow` is set, then only warned about;
 * `volatile-*` is warned about. A server that does not let this user read `INFO` (EMQ_NOPERM) is
 * warned about, not refused; any other failure rejects. Resolves to the policies seen.
 */
export async function checkEvictionPolicy(client: Redis | Cluster, allow: boolean, log: ConnectionLogger): Promise<string[]> {
  const servers = client instanceof Cluster ? client.nodes('master') : [client];
  const policies: string[] = [];
  for (const server of servers) {
    let policy: string;
    try {
      policy = await readPolicy(server);
    } catch (err) {
      if (!(err instanceof EchoMqError && err.code === 'EMQ_NOPERM')) throw err;
      log.warn(`EchoMQ cannot read the server's maxmemory-policy (${describeError(err)}); grant +info to check it`);
      continue;
    }
    policies.push(policy);
    const verdict = judgePolicy(policy);
    if (verdict === 'refuse' && !allow) {
      throw new EvictionPolicyError(
        `maxmemory-policy is ${policy}: Valkey may evict any key, including queue rows, their fencing counter and the bus log, losing acknowledged work. ` +
          `Set it to noeviction (or volatile-*), or pass connection.allowEvictingPolicy: true for a cache-only deployment`,
      );
    }
    if (verdict === 'refuse') log.warn(`maxmemory-policy is ${policy}: EchoMQ data may be evicted (allowed by allowEvictingPolicy)`);
    if (verdict === 'warn') log.warn(`maxmemory-policy is ${policy}: under memory pressure Valkey may evict ${VOLATILE_VICTIMS} (queue and bus data carry no TTL and stay)`);
  }
  return policies;
}
