import { Cluster, type Redis } from 'iovalkey';
import { EchoMqError, EvictionPolicyError } from '../errors.js';
import { describeError } from '../reply-errors.js';

/** Where a connection reports what it cannot throw to anyone. */
export interface ConnectionLogger {
  /** Something worth a look: a `volatile-*` policy, a check that could not run. */
  warn(message: string): void;
  /** Data at risk: an `allkeys-*` policy seen after open. When absent, such messages go to `warn`. */
  error?(message: string): void;
}

/** The default logger: a process warning (printed once per message by Node). */
export const processWarnings: ConnectionLogger = {
  warn: (message) => process.emitWarning(message, { code: 'EMQ_CONNECTION' }),
  error: (message) => process.emitWarning(message, { type: 'EchoMqError', code: 'EMQ_EVICTION_POLICY' }),
};

/** What `volatile-*` may evict: the keys EchoMQ writes with a TTL (queue and bus keys carry none). */
export const VOLATILE_VICTIMS = 'cache entries, cache tombstones, cache fill leases and cache tag indexes';

const AT_RISK = 'Valkey may evict any key, including queue rows, their fencing counter and the bus log, losing acknowledged work';
const REMEDY = 'Set it to noeviction (or volatile-*), or pass connection.allowEvictingPolicy: true for a cache-only deployment';

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
export async function readEvictionPolicy(client: Redis): Promise<string> {
  const info = await client.info('memory');
  return /^maxmemory_policy:(\S+)/m.exec(info)?.[1] ?? 'unknown';
}

/**
 * Reads the policy of every primary `client` talks to. A primary that does not let this user read
 * `INFO` (EMQ_NOPERM) is warned about and left out; any other failure rejects.
 */
export async function readPolicies(client: Redis | Cluster, log: ConnectionLogger): Promise<string[]> {
  const servers = client instanceof Cluster ? client.nodes('master') : [client];
  const policies: string[] = [];
  for (const server of servers) {
    try {
      policies.push(await readEvictionPolicy(server));
    } catch (err) {
      if (!(err instanceof EchoMqError && err.code === 'EMQ_NOPERM')) throw err;
      log.warn(`EchoMQ cannot read the server's maxmemory-policy (${describeError(err)}); grant +info to check it`);
    }
  }
  return policies;
}

/** Warns about each policy that may evict something but is let through (`volatile-*`, or `allkeys-*` when allowed). */
function warnAbout(policies: readonly string[], log: ConnectionLogger): void {
  for (const policy of policies) {
    const verdict = judgePolicy(policy);
    if (verdict === 'refuse') log.warn(`maxmemory-policy is ${policy}: EchoMQ data may be evicted (allowed by allowEvictingPolicy)`);
    if (verdict === 'warn') log.warn(`maxmemory-policy is ${policy}: under memory pressure Valkey may evict ${VOLATILE_VICTIMS} (queue and bus data carry no TTL and stay)`);
  }
}

/**
 * Checks the eviction policy of every primary `client` talks to. `allkeys-*` is refused with
 * `EvictionPolicyError` (EMQ_EVICTION_POLICY) unless `allow` is set, then only warned about;
 * `volatile-*` is warned about. A server that does not let this user read `INFO` (EMQ_NOPERM) is
 * warned about, not refused; any other failure rejects. Resolves to the policies seen.
 */
export async function checkEvictionPolicy(client: Redis | Cluster, allow: boolean, log: ConnectionLogger): Promise<string[]> {
  const policies = await readPolicies(client, log);
  const refused = policies.find((p) => judgePolicy(p) === 'refuse');
  if (refused !== undefined && !allow) throw new EvictionPolicyError(`maxmemory-policy is ${refused}: ${AT_RISK}. ${REMEDY}`);
  warnAbout(policies, log);
  return policies;
}

/** What the eviction-policy check last read (`EchoMqConnection.evictionPolicy`). */
export interface EvictionPolicyState {
  /** The `maxmemory-policy` of each primary that could be read (one on a single server). */
  readonly policies: readonly string[];
  /** True when one of them is `allkeys-*` and `allowEvictingPolicy` is not set: EchoMQ data may be evicted. */
  readonly unsafe: boolean;
  /** When it was read (ms since the epoch). */
  readonly checkedAt: number;
}

/** Told when the policies read change (not on every check). */
export type EvictionPolicyListener = (state: EvictionPolicyState) => void;

/** The distinct policies, for a message. */
const named = (policies: readonly string[]): string => [...new Set(policies)].sort().join(', ') || 'unreadable';

/**
 * Keeps checking the eviction policy after the check at open: at every reconnect (`ready`) and
 * every `intervalMs` (0 = only at reconnects; the timer is unref'd). Never throws: an `allkeys-*`
 * policy without `allow` is logged as an error once per change, a return to safety once, and a
 * check that fails (connection down, no `+info`) warns at most once.
 */
export class EvictionPolicyWatch {
  private last?: EvictionPolicyState;
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private watching = false;
  private failureWarned = false;
  private readonly listeners = new Set<EvictionPolicyListener>();
  private readonly warned = new Set<string>();
  private readonly onReady = (): void => void this.check();
  /** `log.warn`, each message once. */
  private readonly warnOnce: ConnectionLogger = {
    warn: (m) => {
      if (this.warned.has(m)) return;
      this.warned.add(m);
      this.log.warn(m);
    },
  };

  /** Watches `client`'s primaries; `log` is where errors and warnings go. */
  constructor(
    private readonly client: Redis | Cluster,
    private readonly allow: boolean,
    private readonly intervalMs: number,
    private readonly log: ConnectionLogger,
  ) {}

  /** What the last check read; undefined before the first. */
  get state(): EvictionPolicyState | undefined {
    return this.last;
  }

  /** The check at open: rejects with `EvictionPolicyError` as `checkEvictionPolicy` does, else records what it read. */
  async checkAtOpen(): Promise<void> {
    this.record(await checkEvictionPolicy(this.client, this.allow, this.warnOnce));
  }

  /** Starts checking at every reconnect and every `intervalMs` (idempotent). */
  start(): void {
    if (this.watching) return;
    this.watching = true;
    this.client.on('ready', this.onReady);
    if (this.intervalMs <= 0) return;
    // A client that is down is checked when it is ready again (the 'ready' listener), not queued for.
    this.timer = setInterval(() => void (this.client.status === 'ready' && this.check()), this.intervalMs);
    this.timer.unref();
  }

  /** Stops the timer and the reconnect check; a check in flight is then ignored. */
  stop(): void {
    this.watching = false;
    clearInterval(this.timer);
    this.timer = undefined;
    this.client.off('ready', this.onReady);
  }

  /** Calls `listener` with the new state whenever the policies read change; returns the unsubscribe. */
  subscribe(listener: EvictionPolicyListener): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** Checks now (one check at a time); never rejects. */
  check(): Promise<void> {
    this.running ??= this.recheck()
      .catch((err: unknown) => {
        if (!this.watching || this.failureWarned) return;
        this.failureWarned = true;
        this.log.warn(`cannot check the server's maxmemory-policy (${describeError(err)}); checking again at the next reconnect or interval (warned once)`);
      })
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  private async recheck(): Promise<void> {
    const policies = await readPolicies(this.client, this.warnOnce);
    if (!this.watching) return;
    const before = this.last;
    const now = this.record(policies);
    if (before && named(before.policies) === named(policies)) return;
    const was = before ? ` (was ${named(before.policies)})` : '';
    if (now.unsafe) {
      const message = `EMQ_EVICTION_POLICY maxmemory-policy is now ${named(policies)}${was}: ${AT_RISK}. EchoMQ keeps running (stopping would not protect what is stored). ${REMEDY}`;
      if (this.log.error) this.log.error(message);
      else this.log.warn(message);
    } else {
      if (before?.unsafe) this.log.warn(`maxmemory-policy is ${named(policies)} again${was}: EchoMQ data is no longer at risk of eviction`);
      warnAbout(policies, this.warnOnce);
    }
    for (const listener of this.listeners) {
      try {
        listener(now);
      } catch (err) {
        this.warnOnce.warn(`an eviction-policy listener threw: ${describeError(err)}`);
      }
    }
  }

  private record(policies: readonly string[]): EvictionPolicyState {
    const unsafe = !this.allow && policies.some((p) => judgePolicy(p) === 'refuse');
    this.last = { policies, unsafe, checkedAt: Date.now() };
    return this.last;
  }
}
