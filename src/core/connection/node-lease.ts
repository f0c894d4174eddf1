import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { InvalidOptionError, NodeLeaseError, ValkeyUnavailableError } from '../errors.js';
import { IdMinter } from '../ids.js';
import type { ScriptClient } from '../scripts.js';
import { wire } from '../wire/index.js';

/** Tuning of a process's node-number lease (docs/protocol.md §1). */
export interface NodeLeaseOptions {
  /** Lease length in ms (1000..3600000). Default 60000. Renewed every quarter of it. */
  readonly leaseMs?: number;
  /** How long `ready()` waits for a certain lease before failing with EMQ_NODE_LEASE. Default 10000. */
  readonly waitMs?: number;
  /** Called after the lease moved to a fresh number (e.g. to rename the connections). */
  readonly onRebind?: (node: number) => void;
  /**
   * The process's description, read at each claim and renewal and sent with it (node.lua's
   * describing form, `{emq}:procs`); the release deletes it. Absent: the two-key form, no description.
   */
  readonly describe?: () => string;
}

/** What the lease needs of a Redis or Cluster client: its events and its state. */
export interface LeaseClient {
  on(event: string, listener: () => void): unknown;
  off(event: string, listener: () => void): unknown;
  readonly status: string;
}

/** Events after which the server may no longer hold our lease (a restart, a failover: a node gone). */
const LOST = ['close', '-node'];
/**
 * Events after which a renewal is sent at once: the client is ready again, or a cluster's
 * topology changed (a new node need not mean a lost lease, so it only renews early).
 */
const AGAIN = ['ready', '-node', '+node'];
const RESOLVED = Promise.resolve();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A process's node number, held as a lease in `{emq}:nodes`, and the minter of its ids.
 *
 * The lease is *certain* only while the monotonic clock is before the send time of the last
 * confirmed renewal + lease − a quarter of the lease (the margin covers the server's wall clock
 * stepping), and the connection has not dropped since that renewal. Renewals run every quarter
 * of the lease and at once after every reconnect. While the lease is uncertain, `next()` throws
 * `NodeLeaseError` (EMQ_NODE_LEASE) and `ready()` renews and waits; a renewal that finds the
 * number held by another owner takes a fresh number and moves the minter past the current
 * millisecond. So a process never mints on a number it does not certainly hold.
 */
export class NodeLease {
  /** Random token naming this process in `{emq}:nodes`. */
  readonly owner = randomBytes(12).toString('hex');
  private readonly leaseMs: number;
  private readonly waitMs: number;
  private readonly onRebind?: (node: number) => void;
  private readonly describe?: () => string;
  private minter?: IdMinter;
  private certainUntil = 0;
  private generation = 0;
  private inflight?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly client: LeaseClient,
    private readonly scripts: ScriptClient,
    opts: NodeLeaseOptions = {},
  ) {
    this.leaseMs = opts.leaseMs ?? 60_000;
    this.waitMs = opts.waitMs ?? 10_000;
    this.onRebind = opts.onRebind;
    this.describe = opts.describe;
    if (!Number.isInteger(this.leaseMs) || this.leaseMs < 1000 || this.leaseMs > 3_600_000) {
      throw new InvalidOptionError('node lease must be an integer in 1000..3600000 ms');
    }
    if (!Number.isFinite(this.waitMs) || this.waitMs < 0) throw new InvalidOptionError('node lease wait must be >= 0 ms');
  }

  /** Claims a free number and starts renewing it. */
  async open(): Promise<void> {
    const gen = this.generation;
    const sentAt = performance.now();
    const n = await wire.node(this.scripts, this.owner, this.leaseMs, undefined, this.describe?.());
    if (n < 0) throw new ValkeyUnavailableError('every node number (0..1023) is leased');
    this.minter = new IdMinter(n);
    this.confirm(gen, sentAt);
    for (const e of LOST) this.client.on(e, this.lost);
    for (const e of AGAIN) this.client.on(e, this.again);
    this.timer = setInterval(this.again, this.leaseMs / 4);
    this.timer.unref();
  }

  /** The node number in the ids minted now. */
  get node(): number {
    if (!this.minter) throw new ValkeyUnavailableError('EchoMQ connection is not open yet');
    return this.minter.node;
  }

  /** True while the number is certainly ours (see the class comment). */
  get certain(): boolean {
    return performance.now() < this.certainUntil;
  }

  /**
   * Mints the next id of namespace `ns`. Throws `NodeLeaseError` (EMQ_NODE_LEASE) while the lease
   * is uncertain: callers that can wait `await ready()` first.
   */
  next(ns: string): string {
    if (!this.minter) throw new ValkeyUnavailableError('EchoMQ connection is not open yet');
    if (!this.certain) {
      throw new NodeLeaseError(`node number ${this.minter.node} is not certainly held right now (unconfirmed since a reconnect, a stall or failed renewals)`);
    }
    return this.minter.next(ns);
  }

  /**
   * Resolves at once while the lease is certain; otherwise renews and waits until it is. Rejects
   * with the renewal's error (e.g. EMQ_UNAVAILABLE) or, after `waitMs`, with `NodeLeaseError`.
   */
  ready(): Promise<void> {
    return this.certain ? RESOLVED : this.waitCertain();
  }

  private async waitCertain(): Promise<void> {
    const until = performance.now() + this.waitMs;
    while (!this.certain) {
      if (this.closed || !this.minter) throw new NodeLeaseError('the EchoMQ connection is not open');
      if (performance.now() >= until) throw new NodeLeaseError(`no certain node number after ${this.waitMs} ms`);
      await this.renew();
      if (!this.certain) await sleep(25);
    }
  }

  /** Renews now (one round at a time): confirms the number, or moves to a fresh one. */
  renew(): Promise<void> {
    this.inflight ??= this.renewOnce().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async renewOnce(): Promise<void> {
    const m = this.minter;
    if (this.closed || !m) return;
    const gen = this.generation;
    let sentAt = performance.now();
    let got = await wire.node(this.scripts, this.owner, this.leaseMs, m.node, this.describe?.());
    if (got < 0) {
      // Another owner holds our number: our lease lapsed (a stall, a failover, a restart). Never
      // mint on it again; take a fresh one (rebind moves past the current millisecond).
      this.certainUntil = 0;
      sentAt = performance.now();
      got = await wire.node(this.scripts, this.owner, this.leaseMs, undefined, this.describe?.());
      if (got < 0) throw new NodeLeaseError('every node number (0..1023) is leased');
      if (this.closed) return;
      m.rebind(got);
      this.onRebind?.(got);
    }
    this.confirm(gen, sentAt);
  }

  /** A renewal sent at `sentAt` succeeded: certain until its lease (less the margin) runs out. */
  private confirm(gen: number, sentAt: number): void {
    if (gen !== this.generation || this.closed) return; // the connection dropped meanwhile
    this.certainUntil = sentAt + this.leaseMs - this.leaseMs / 4;
  }

  private readonly lost = (): void => {
    this.generation++;
    this.certainUntil = 0;
  };

  private readonly again = (): void => {
    this.renew().catch(() => undefined); // retried on the next tick or event; certainty lapses meanwhile
  };

  /**
   * Stops renewing and releases the number (best effort, when connected): node.lua ends the
   * lease one second later, so the next holder's ids never share a millisecond with ours.
   */
  async release(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.certainUntil = 0;
    if (this.timer) clearInterval(this.timer);
    for (const e of LOST) this.client.off(e, this.lost);
    for (const e of AGAIN) this.client.off(e, this.again);
    if (!this.minter || this.client.status !== 'ready') return;
    await this.inflight?.catch(() => undefined);
    await wire.node(this.scripts, this.owner, 0, this.minter.node, this.describe ? '' : undefined).catch(() => undefined);
  }
}
