import type { EchoMqConnection } from '../core/connection/index.js';
import { InvalidOptionError, ValkeyUnavailableError } from '../core/errors.js';
import { CoordKeys } from '../core/keys.js';
import { coordWire } from '../core/wire/index.js';
import { resolveElectionOptions, resolveLeaseOptions, resolveSemaphoreOptions, resolveServiceOptions, type ResolvedService } from './coordination-options.js';
import type { CoordinationOptions, Election, ElectionOptions, Lease, LeaseOptions, LeaseState, Permit, SemaphoreOptions } from './coordination-types.js';
import { Campaign } from './election.js';
import { acquireLease, type HeldLease } from './lease.js';
import { acquirePermit, type HeldPermit } from './semaphore.js';

/**
 * Coordination on one Valkey (docs/coordination.md): fenced leases, counting semaphores and
 * leader election, over `lease.lua` and `semaphore.lua`. One owner identity per service; every
 * lease, permit and campaign it hands out is released by `close()`.
 */
export class CoordinationService {
  private readonly o: ResolvedService;
  private readonly leases = new Map<string, HeldLease>();
  private readonly permits = new Set<HeldPermit>();
  private readonly elections = new Map<string, Campaign>();
  private permitSeq = 0;
  private closing?: Promise<void>;

  constructor(
    private readonly conn: EchoMqConnection,
    options?: CoordinationOptions,
  ) {
    this.o = resolveServiceOptions(options);
  }

  /** This service's owner identity (every lease's `owner`; permits are `<owner>.<n>`). */
  get owner(): string {
    return this.o.owner;
  }

  /**
   * Acquires the lease `name` (a name of the key grammar), waiting up to `opts.waitMs`; null when
   * another owner holds it. A name this service already holds is re-entrant: the same `Lease`,
   * renewed (same token; its ttl and autoRenew stay those of the first acquire).
   */
  async tryAcquire(name: string, opts: LeaseOptions): Promise<Lease | null> {
    const keys = new CoordKeys(name, 'lease');
    const hold = resolveLeaseOptions(opts);
    this.refuseClosed();
    if (this.elections.has(name)) throw new InvalidOptionError(`this CoordinationService campaigns for role "${name}": its lease is the campaign's`);
    const mine = this.leases.get(name);
    // Re-entrant: renew the lease held (its ttl stays the first acquire's, so its local deadline
    // and the server's expiry keep one rule); a refused renewal means it was lost: acquire anew.
    if (mine && !mine.signal.aborted && (await mine.renew())) return mine;
    const lease = await acquireLease(this.conn.scriptClient, keys, this.owner, hold, this.o.logger, (l) => {
      if (this.leases.get(name) === l) this.leases.delete(name);
    });
    if (lease) this.leases.set(name, lease);
    return lease;
  }

  /** The state of the lease `name` (writes nothing). */
  async read(name: string): Promise<LeaseState> {
    const keys = new CoordKeys(name, 'lease');
    const r = await coordWire.lease(this.conn.scriptClient, keys, 'read', this.owner, null, 0);
    return { held: r.ok, owner: r.owner, token: r.token, expiresAt: r.exp > 0 ? new Date(r.exp) : null };
  }

  /** Takes a permit of the semaphore `name` (at most `opts.limit` holders), waiting up to `opts.waitMs`; null when none is free. */
  async semaphore(name: string, opts: SemaphoreOptions): Promise<Permit | null> {
    const keys = new CoordKeys(name, 'semaphore');
    const hold = resolveSemaphoreOptions(opts);
    this.refuseClosed();
    const holder = `${this.owner}.${++this.permitSeq}`;
    const permit = await acquirePermit(this.conn.scriptClient, keys, holder, hold, this.o.logger, (p) => this.permits.delete(p));
    if (permit) this.permits.add(permit);
    return permit;
  }

  /**
   * Campaigns for `role` until stop(): polls every min(ttl/4, 500 ms) while not leader, renews
   * every ttl/3 while leader; hand-over after a crash ≤ ttl + poll. One campaign per role per service.
   */
  elect(role: string, opts?: ElectionOptions): Election {
    const keys = new CoordKeys(role, 'role');
    const o = resolveElectionOptions(opts);
    this.refuseClosed();
    if (this.elections.has(role)) throw new InvalidOptionError(`this CoordinationService already campaigns for role "${role}"; stop() that election first`);
    if (this.leases.get(role)?.signal.aborted === false) throw new InvalidOptionError(`this CoordinationService holds the lease "${role}"; release it before campaigning for that role`);
    const campaign: Campaign = new Campaign(this.conn.scriptClient, keys, this.owner, o.ttlMs, o.onElected, this.o.logger, () => {
      if (this.elections.get(role) === campaign) this.elections.delete(role);
    });
    this.elections.set(role, campaign);
    return campaign;
  }

  /** Stops every election and releases every lease/permit this service holds (called at shutdown). */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const all: Promise<void>[] = [...this.elections.values()].map((e) => e.stop());
      for (const l of this.leases.values()) all.push(l.release());
      for (const p of this.permits) all.push(p.release());
      const failed = (await Promise.allSettled(all)).filter((r) => r.status === 'rejected');
      if (failed.length > 0) this.o.logger.warn(`CoordinationService: ${failed.length} release(s) failed at close; those leases expire by themselves`);
    })();
    return this.closing;
  }

  private refuseClosed(): void {
    if (this.closing) throw new ValkeyUnavailableError('the CoordinationService is closed');
  }
}
