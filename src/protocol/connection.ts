import { randomBytes } from 'node:crypto';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'iovalkey';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import { InvalidOptionError, ValkeyUnavailableError } from './errors.js';
import { IdMinter } from './ids.js';
import type { ScriptClient } from './scripts.js';
import { wire } from './wire.js';

/** Where Valkey is: a URL, host/port, or a cluster node list. */
export interface ValkeyConnectionOptions {
  /** `redis://[user:pass@]host:port[/db]` or `rediss://…` for TLS. */
  readonly url?: string;
  readonly host?: string;
  readonly port?: number;
  readonly username?: string;
  readonly password?: string;
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
}

/** A client EchoMQ can run scripts and plain commands on. */
export type ValkeyClient = Redis | Cluster;

function redisOptions(o: ValkeyConnectionOptions): RedisOptions {
  const tls = o.tls === true ? {} : o.tls || undefined;
  return {
    username: o.username,
    password: o.password,
    db: o.db,
    tls,
    connectTimeout: o.connectTimeoutMs ?? 5000,
    // A command waits out a short reconnect (offline queue) but never longer than this timeout,
    // and at most two reconnect attempts: then it fails with a typed EMQ_UNAVAILABLE.
    commandTimeout: o.commandTimeoutMs === 0 ? undefined : (o.commandTimeoutMs ?? 10_000),
    lazyConnect: true,
    maxRetriesPerRequest: 2,
    retryStrategy: (times: number) => Math.min(50 * 2 ** times, 2000),
  };
}

/** Opens a client (not yet connected) for the options. */
export function createClient(o: ValkeyConnectionOptions): ValkeyClient {
  const client = buildClient(o, o.autoPipelining ?? false);
  // Connection errors surface through the commands that fail (typed EMQ_UNAVAILABLE) and the
  // reconnect loop; the last one is kept so a failed connect can name its real cause.
  client.on('error', (err: Error) => {
    lastErrors.set(client, err);
  });
  return client;
}

const lastErrors = new WeakMap<ValkeyClient, Error>();

function buildClient(o: ValkeyConnectionOptions, autoPipeline: boolean): ValkeyClient {
  if (o.cluster && o.cluster.length > 0) {
    const opts: ClusterOptions = {
      redisOptions: { ...redisOptions(o), lazyConnect: false },
      enableAutoPipelining: autoPipeline,
      enableOfflineQueue: true,
      lazyConnect: true,
    };
    return new Cluster([...o.cluster], opts);
  }
  const base = redisOptions(o);
  if (o.url) {
    if (!/^rediss?:\/\//.test(o.url)) throw new InvalidOptionError(`connection url must start with redis:// or rediss://`);
    return new Redis(o.url, { ...base, enableAutoPipelining: autoPipeline });
  }
  return new Redis({ ...base, host: o.host ?? '127.0.0.1', port: o.port ?? 6379, enableAutoPipelining: autoPipeline });
}

/** Connects a client, mapping failure to `ValkeyUnavailableError`. */
export async function connectClient(client: ValkeyClient): Promise<void> {
  try {
    await client.connect();
  } catch (err) {
    client.disconnect();
    const cause = lastErrors.get(client) ?? (err as Error);
    throw new ValkeyUnavailableError(`cannot connect to Valkey: ${cause.message}`, cause);
  }
}

const NODE_LEASE_MS = 60_000;

/**
 * One process's link to Valkey: a command client, blocking clients on demand,
 * and the node number its ids are minted with, held as a renewed lease.
 */
export class EchoMqConnection {
  readonly client: ValkeyClient;
  private minter?: IdMinter;
  private readonly owner = randomBytes(12).toString('hex');
  private renewTimer?: NodeJS.Timeout;
  private readonly extra = new Set<ValkeyClient>();

  constructor(readonly options: ValkeyConnectionOptions) {
    this.client = createClient(options);
  }

  /** Connects and claims a node number. */
  async open(): Promise<void> {
    await connectClient(this.client);
    const node = await wire.node(this.scriptClient, this.owner, NODE_LEASE_MS);
    if (node < 0) throw new ValkeyUnavailableError('every node number (0..1023) is leased');
    this.minter = new IdMinter(node);
    this.renewTimer = setInterval(() => void this.renew(), NODE_LEASE_MS / 3);
    this.renewTimer.unref();
  }

  private async renew(): Promise<void> {
    if (!this.minter) return;
    try {
      const got = await wire.node(this.scriptClient, this.owner, NODE_LEASE_MS, this.minter.node);
      if (got < 0) {
        // Our lease lapsed and another process took the number: take a fresh one.
        const fresh = await wire.node(this.scriptClient, this.owner, NODE_LEASE_MS);
        if (fresh >= 0) this.minter.rebind(fresh);
      }
    } catch {
      // Renewal retries on the next tick; the lease outlives two missed renewals.
    }
  }

  /** The client as the script registry sees it. */
  get scriptClient(): ScriptClient {
    return this.client as unknown as ScriptClient;
  }

  /** The node number ids are minted with. */
  get node(): number {
    return this.ids.node;
  }

  /** Mints branded ids for this process. */
  get ids(): IdMinter {
    if (!this.minter) throw new ValkeyUnavailableError('EchoMQ connection is not open yet');
    return this.minter;
  }

  /** A dedicated connection for blocking commands; closed with this connection. */
  blockingClient(): Promise<ValkeyClient> {
    return this.dedicated(this.options);
  }

  /**
   * A dedicated client to one node (host/port) of this connection's deployment, e.g. a cluster
   * primary for sharded subscriptions; closed with this connection.
   */
  nodeClient(host: string, port: number): Promise<ValkeyClient> {
    const { cluster: _seeds, url: _url, ...rest } = this.options;
    return this.dedicated({ ...rest, host, port });
  }

  /** Opens a tracked client with no command timeout (it may block) and no auto-pipelining. */
  private async dedicated(o: ValkeyConnectionOptions): Promise<ValkeyClient> {
    const c = createClient({ ...o, commandTimeoutMs: 0, autoPipelining: false });
    this.extra.add(c);
    await connectClient(c);
    return c;
  }

  /** Closes a client made by `blockingClient` or `nodeClient`. */
  release(c: ValkeyClient): void {
    this.extra.delete(c);
    c.disconnect();
  }

  /** Closes every client. */
  async close(): Promise<void> {
    if (this.renewTimer) clearInterval(this.renewTimer);
    for (const c of this.extra) c.disconnect();
    this.extra.clear();
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}
