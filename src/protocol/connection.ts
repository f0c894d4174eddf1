import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'iovalkey';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import { clientName, nameClient, typedErrors, type ClientRole } from './client-setup.js';
import { InvalidOptionError, ValkeyUnavailableError, describeError, fromReplyError } from './errors.js';
import { checkEvictionPolicy, processWarnings, type ConnectionLogger } from './eviction-policy.js';
import { NodeLease, type NodeLeaseOptions } from './node-lease.js';
import type { ScriptClient } from './scripts.js';
import { keySlot } from './slot.js';

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
   * refused at startup with EMQ_EVICTION_POLICY (see docs/operations.md).
   */
  readonly allowEvictingPolicy?: boolean;
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

/**
 * Opens a client (not yet connected) for the options, named `name` in `CLIENT LIST` when given;
 * every command on it fails with a typed EchoMqError.
 */
export function createClient(o: ValkeyConnectionOptions, name?: string): ValkeyClient {
  const client = buildClient(o, o.autoPipelining ?? false);
  typedErrors(client);
  if (name) void nameClient(client, name);
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

/**
 * Connects a client (stopping it when that fails, unless `keepRetrying`). Refused credentials fail with `AuthenticationError` (EMQ_AUTH), a denied
 * command with `PermissionDeniedError` (EMQ_NOPERM); any other failure with `ValkeyUnavailableError`.
 */
export async function connectClient(client: ValkeyClient, keepRetrying = false): Promise<void> {
  try {
    await client.connect();
  } catch (err) {
    // Stopped, unless the caller wants the client to keep reconnecting in the background.
    if (!keepRetrying) client.disconnect();
    const cause = lastErrors.get(client) ?? (err as Error);
    const typed = fromReplyError(cause);
    if (typed.code === 'EMQ_AUTH' || typed.code === 'EMQ_NOPERM') throw typed;
    throw new ValkeyUnavailableError(`cannot connect to Valkey: ${cause.message}`, cause);
  }
}

/**
 * One process's link to Valkey: a command client, blocking clients on demand,
 * and the node number its ids are minted with, held as a renewed lease.
 */
export class EchoMqConnection {
  readonly client: ValkeyClient;
  private lease?: NodeLease;
  /** The dedicated clients, with the role each is named for. */
  private readonly extra = new Map<ValkeyClient, ClientRole>();
  /** Where warnings go (the eviction policy, a failed re-check); set before `open`. Default: process warnings. */
  logger: ConnectionLogger = processWarnings;
  private readonly warned = new Set<string>();
  /** The open in progress (`ensureOpen`), shared by concurrent callers. */
  private opening?: Promise<void>;
  /** The lease of a connection opened on first use, made before it is opened (`openOnFirstUse`). */
  private firstUseLease?: NodeLease;
  private watchingPolicy = false;
  private closed = false;

  constructor(
    readonly options: ValkeyConnectionOptions,
    private readonly leaseOptions: NodeLeaseOptions = {},
  ) {
    this.client = createClient(options, clientName('cmd'));
  }

  /**
   * Connects, checks the server's eviction policy (refusing `allkeys-*` with EMQ_EVICTION_POLICY
   * unless `allowEvictingPolicy`; again after every reconnect, then only warning), claims a node
   * number and names the command connection `emq:cmd:<node>`.
   */
  async open(): Promise<void> {
    // A connection opened on first use may already be connecting (a plain command started it, or
    // a failed first use left it reconnecting in the background).
    if (this.client.status === 'wait' || this.client.status === 'end') await connectClient(this.client, this.firstUseLease !== undefined);
    try {
      await this.checkPolicy();
    } catch (err) {
      this.client.disconnect();
      throw err;
    }
    if (!this.watchingPolicy) {
      this.watchingPolicy = true;
      this.client.on('ready', () => {
        this.checkPolicy().catch((err: unknown) => this.warnOnce(`after a reconnect: ${describeError(err)}`));
      });
    }
    // The node number: a lease in `{emq}:nodes`, renewed and checked by node-lease.ts.
    const lease = this.firstUseLease ?? this.newLease();
    await lease.open();
    this.lease = lease;
    await this.rename(lease.node);
  }

  private newLease(): NodeLease {
    return new NodeLease(this.client, this.scriptClient, {
      waitMs: this.options.commandTimeoutMs || 10_000,
      onRebind: (node) => void this.rename(node).catch((err: unknown) => this.warnOnce(`renaming connections: ${describeError(err)}`)),
      ...this.leaseOptions,
    });
  }

  /**
   * Opens unless open already: concurrent callers share one attempt, and a failed attempt is
   * forgotten, so the next call tries again.
   */
  ensureOpen(): Promise<void> {
    if (this.lease) return Promise.resolve();
    if (this.closed) return Promise.reject(new ValkeyUnavailableError('the EchoMQ connection is closed'));
    this.opening ??= this.open().finally(() => {
      this.opening = undefined;
    });
    return this.opening;
  }

  /**
   * Opens this connection on first use instead of now (a producer-only app that must start while
   * Valkey is unreachable): the first `ids.ready()` (every enqueue, flow and cache write) opens
   * it and waits; a plain command connects the client, and the rest of `open` (policy check,
   * node lease, names) follows at once, a refusal then logged. A failed open is retried by the
   * next use. Call before any use, instead of `open`.
   */
  openOnFirstUse(): void {
    if (this.firstUseLease || this.lease) return;
    const lease = this.newLease();
    const ready = lease.ready.bind(lease);
    lease.ready = () => (this.lease ? ready() : this.ensureOpen().then(ready));
    this.firstUseLease = lease;
    this.client.once('ready', () => {
      this.ensureOpen().catch((err: unknown) => this.warnOnce(`opening on first use: ${describeError(err)}`));
    });
  }


  private async checkPolicy(): Promise<void> {
    await checkEvictionPolicy(this.client, this.options.allowEvictingPolicy === true, { warn: (m) => this.warnOnce(m) });
  }

  private warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.logger.warn(message);
  }

  /** The client as the script registry sees it. */
  get scriptClient(): ScriptClient {
    return this.client as unknown as ScriptClient;
  }

  /** The node number ids are minted with. */
  get node(): number {
    return this.ids.node;
  }

  /**
   * Mints branded ids for this process under its node lease: `next()` throws `NodeLeaseError`
   * (EMQ_NODE_LEASE) while the lease is uncertain; `await ids.ready()` waits until it is certain.
   */
  get ids(): NodeLease {
    if (!this.lease && this.firstUseLease) return this.firstUseLease;
    if (!this.lease) throw new ValkeyUnavailableError('EchoMQ connection is not open yet');
    return this.lease;
  }

  /**
   * A dedicated connection for blocking commands (named `emq:block:<node>`, or `emq:sub:<node>`
   * for a subscriber); closed with this connection.
   */
  blockingClient(role: ClientRole = 'block'): Promise<ValkeyClient> {
    return this.dedicated(this.options, role);
  }

  /**
   * A dedicated client to one node (host/port) of this connection's deployment, e.g. a cluster
   * primary for sharded subscriptions; closed with this connection.
   */
  nodeClient(host: string, port: number): Promise<ValkeyClient> {
    const { cluster: _seeds, url: _url, ...rest } = this.options;
    return this.dedicated({ ...rest, host, port }, 'sub');
  }

  /** Opens a tracked, named client with no command timeout (it may block) and no auto-pipelining. */
  private async dedicated(o: ValkeyConnectionOptions, role: ClientRole): Promise<ValkeyClient> {
    const c = createClient({ ...o, commandTimeoutMs: 0, autoPipelining: false }, clientName(role, this.lease?.node));
    this.extra.set(c, role);
    try {
      await connectClient(c);
    } catch (err) {
      this.extra.delete(c);
      throw err;
    }
    return c;
  }

  /** Renames every connection for node number `node` (`emq:<role>:<node>`), e.g. after the number changed. */
  async rename(node: number): Promise<void> {
    await Promise.all([nameClient(this.client, clientName('cmd', node)), ...[...this.extra].map(([c, role]) => nameClient(c, clientName(role, node)))]);
  }

  /**
   * Unblocks the client with server id `id`, blocked on `key` (`CLIENT UNBLOCK`, sent to the node
   * that serves `key`'s slot in a cluster). True when a client was unblocked.
   */
  async unblock(id: number, key: string): Promise<boolean> {
    let target: Redis | undefined;
    if (this.client instanceof Cluster) {
      const owner = this.client.slots[keySlot(key)]?.[0];
      target = this.client.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === owner);
    } else target = this.client;
    if (!target) return false;
    return (await target.client('UNBLOCK', id)) === 1;
  }

  /** Closes a client made by `blockingClient` or `nodeClient`. */
  release(c: ValkeyClient): void {
    this.extra.delete(c);
    c.disconnect();
  }

  /** Closes every client. */
  async close(): Promise<void> {
    this.closed = true;
    await this.lease?.release();
    for (const c of this.extra.keys()) c.disconnect();
    this.extra.clear();
    // A client that is not connected has nothing to quit (QUIT would wait for a connection).
    if (this.client.status !== 'ready') return void this.client.disconnect();
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}
