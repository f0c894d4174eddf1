import { Cluster, type Redis } from 'iovalkey';
import { clientName, nameClient, type ClientRole } from './client-setup.js';
import { connectClient, createClient, resolveEvictionCheckMs, type ValkeyClient } from './client.js';
import type { ValkeyConnectionOptions } from './connection-options.js';
import { EchoMqError, ValkeyUnavailableError } from '../errors.js';
import { describeError } from '../reply-errors.js';
import { EvictionPolicyWatch, processWarnings, type ConnectionLogger, type EvictionPolicyListener, type EvictionPolicyState } from './eviction-policy.js';
import { NodeLease, type NodeLeaseOptions } from './node-lease.js';
import { ProcessDescription } from './process-description.js';
import type { ScriptClient } from '../scripts.js';
import { keySlot } from '../slot.js';

export { connectClient, createClient } from './client.js';
export type { ValkeyClient } from './client.js';
export type { ValkeyConnectionOptions } from './connection-options.js';

/**
 * One process's link to Valkey: a command client, blocking clients on demand,
 * and the node number its ids are minted with, held as a renewed lease.
 */
export class EchoMqConnection {
  readonly client: ValkeyClient;
  private lease?: NodeLease;
  /** The dedicated clients, with the role each is named for. */
  private readonly extra = new Map<ValkeyClient, ClientRole>();
  /** Where warnings and errors go (the eviction policy, a failed re-check); set before `open`. Default: process warnings. */
  logger: ConnectionLogger = processWarnings;
  private readonly warned = new Set<string>();
  /** The open in progress (`ensureOpen`), shared by concurrent callers. */
  private opening?: Promise<void>;
  /** The lease of a connection opened on first use, made before it is opened (`openOnFirstUse`). */
  private firstUseLease?: NodeLease;
  /** The eviction-policy check: at open, then at every reconnect and every `evictionCheckMs`. */
  private readonly policyWatch: EvictionPolicyWatch;
  private closed = false;
  /**
   * What this process runs (queue consumers, Bus group members, relay, scheduler, follower),
   * sent with every node-lease renewal to `{emq}:procs` for the operator's processes view.
   */
  readonly process = new ProcessDescription();

  constructor(
    readonly options: ValkeyConnectionOptions,
    private readonly leaseOptions: NodeLeaseOptions = {},
  ) {
    const checkMs = resolveEvictionCheckMs(options.evictionCheckMs);
    this.client = createClient(options, clientName('cmd'));
    this.policyWatch = new EvictionPolicyWatch(this.client, options.allowEvictingPolicy === true, checkMs, {
      warn: (m) => this.logger.warn(m),
      error: (m) => (this.logger.error ? this.logger.error(m) : this.logger.warn(m)),
    });
  }

  /**
   * Connects, checks the server's eviction policy (refusing `allkeys-*` with EMQ_EVICTION_POLICY
   * unless `allowEvictingPolicy`; again after every reconnect and every `evictionCheckMs`, then
   * logging an error instead: see `evictionPolicy`), claims a node number and names the command
   * connection `emq:cmd:<node>`.
   */
  async open(): Promise<void> {
    // A connection opened on first use may already be connecting (a plain command started it, or
    // a failed first use left it reconnecting in the background).
    if (this.client.status === 'wait' || this.client.status === 'end') await connectClient(this.client, this.firstUseLease !== undefined);
    try {
      await this.policyWatch.checkAtOpen();
    } catch (err) {
      // Opened on first use, a client that is only unreachable keeps reconnecting in the
      // background (a disconnect would leave it stuck); a refusal stops it.
      const unreachable = err instanceof EchoMqError && err.code === 'EMQ_UNAVAILABLE';
      if (!(unreachable && this.firstUseLease)) this.client.disconnect();
      throw err;
    }
    if (!this.closed) this.policyWatch.start();
    // The node number: a lease in `{emq}:nodes`, renewed and checked by node-lease.ts.
    const lease = this.firstUseLease ?? this.newLease();
    await lease.open();
    this.lease = lease;
    this.process.onChange = () => void lease.renew().catch(() => undefined); // a new consumer shows at once
    await this.rename(lease.node);
  }

  private newLease(): NodeLease {
    return new NodeLease(this.client, this.scriptClient, {
      waitMs: this.options.commandTimeoutMs || 10_000,
      describe: () => this.process.text(),
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

  /**
   * The server's eviction policy as last checked (at open, every reconnect, every
   * `evictionCheckMs`); undefined before open. `unsafe` after open means a primary turned
   * `allkeys-*` without `allowEvictingPolicy`: logged as an error, while consumers keep running.
   */
  get evictionPolicy(): EvictionPolicyState | undefined {
    return this.policyWatch.state;
  }

  /** Calls `listener` whenever a check after open reads different policies; returns the unsubscribe. */
  onEvictionPolicy(listener: EvictionPolicyListener): () => void {
    return this.policyWatch.subscribe(listener);
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
    this.policyWatch.stop();
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
