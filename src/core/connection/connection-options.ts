/**
 * What a connection is configured with (`connection` of the module options): where Valkey is, the
 * client's timeouts, the eviction-policy check and the boot retry. Types only, shared by the
 * client factory, the boot retry and `EchoMqConnection`.
 */
import type { ConnectionOptions as TlsOptions } from 'node:tls';

/** How long an app starting while Valkey is down waits for it (`connection.retryAtBoot`). */
export interface BootRetryOptions {
  /** The longest wait in all (ms, 1..3,600,000). Default 30,000. */
  readonly maxWaitMs?: number;
  /** The first pause between attempts (ms, 10..60,000), doubling up to 5 s. Default 250. */
  readonly intervalMs?: number;
}

/** Where Valkey is: a URL, host/port, or a cluster node list. */
export interface ValkeyConnectionOptions {
  /** `redis://[user:pass@]host:port[/db]` or `rediss://…` for TLS. */
  readonly url?: string;
  /** Host when no `url` is given. Default `127.0.0.1`. */
  readonly host?: string;
  /** Port when no `url` is given. Default 6379. */
  readonly port?: number;
  /** ACL user (docs/operations.md §3); a user in `url` takes precedence. */
  readonly username?: string;
  /** Password of `username` (or of the default user); one in `url` takes precedence. */
  readonly password?: string;
  /** Database number (not on a cluster); one in `url` takes precedence. */
  readonly db?: number;
  /** `true` or Node TLS options. */
  readonly tls?: boolean | TlsOptions;
  /** Valkey Cluster seed nodes; when set, a cluster client is used. */
  readonly cluster?: readonly { host: string; port: number }[];
  /** Fail a connect attempt after this many ms. Default 5000. */
  readonly connectTimeoutMs?: number;
  /** Fail a command that got no reply after this many ms (0 = never). Default 10000. */
  readonly commandTimeoutMs?: number;
  /**
   * Let the client gather commands issued in one tick into one write. Default false: measured
   * slower here (the client then waits for a whole batch's replies before the next write).
   */
  readonly autoPipelining?: boolean;
  /**
   * Start even when the server's `maxmemory-policy` is `allkeys-*`, which may evict any key
   * (queue rows, fencing counters, the bus log): for a cache-only deployment. Default false:
   * refused at startup with EMQ_EVICTION_POLICY, and logged as an error when seen later (see
   * docs/operations.md).
   */
  readonly allowEvictingPolicy?: boolean;
  /**
   * How often (ms) the eviction policy is checked again while connected, besides at open and at
   * every reconnect: 0 = only at (re)connects, else 100..3,600,000. Default 10,000. After open an
   * `allkeys-*` policy is logged as an error (once per change) and shown by
   * `EchoMqConnection.evictionPolicy`, never thrown (see docs/operations.md).
   */
  readonly evictionCheckMs?: number;
  /**
   * An app started while Valkey is down waits for it: `true` (up to 30 s) or `{ maxWaitMs,
   * intervalMs }`, each failed attempt logged; wrong credentials (`EMQ_AUTH`) still fail at once.
   * Default false: the module fails fast at startup. (Used by the Nest module's startup; ignored
   * with `consumers: false`, whose connection opens on first use.)
   */
  readonly retryAtBoot?: boolean | BootRetryOptions;
}
