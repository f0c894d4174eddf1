import type { ConsumerLogger } from '../core/logger.js';
import type { CoordKeys } from '../core/keys.js';
import type { ScriptClient } from '../core/scripts.js';
import { coordWire, type LeaseReply } from '../core/wire/index.js';
import { waitPollMs, type ResolvedHold } from './coordination-options.js';
import type { Lease } from './coordination-types.js';
import { Held, pollFor } from './held.js';

/** A lease this process holds: renewed by its keeper, released by token. */
export class HeldLease extends Held implements Lease {
  private exp: number;

  constructor(
    private readonly client: ScriptClient,
    private readonly keys: CoordKeys,
    readonly owner: string,
    readonly token: bigint,
    exp: number,
    sentAt: number,
    private readonly hold: ResolvedHold,
    log: ConsumerLogger,
    onEnd: () => void,
  ) {
    super(`lease "${keys.name}" (token ${token})`, hold, sentAt, log, onEnd);
    this.exp = exp;
  }

  /** The lease's name. */
  get name(): string {
    return this.keys.name;
  }

  /** Server-clock expiry of the last successful acquire or renewal. */
  get expiresAt(): Date {
    return new Date(this.exp);
  }

  protected async sendRenew(): Promise<boolean> {
    const r = await coordWire.lease(this.client, this.keys, 'renew', this.owner, this.token, this.hold.ttlMs);
    if (r.ok) this.exp = r.exp;
    return r.ok;
  }

  protected async sendRelease(): Promise<boolean> {
    return (await coordWire.lease(this.client, this.keys, 'release', this.owner, this.token, 0)).ok;
  }
}

/** One acquire: the reply, and the local time it was sent (the start of the local deadline). */
export async function acquireOnce(client: ScriptClient, keys: CoordKeys, owner: string, ttlMs: number): Promise<{ reply: LeaseReply; sentAt: number }> {
  const sentAt = Date.now();
  const reply = await coordWire.lease(client, keys, 'acquire', owner, null, ttlMs);
  return { reply, sentAt };
}

/**
 * Acquires the lease of `keys.name` for `owner`, polling up to `hold.waitMs`; null when another
 * owner holds it throughout (or `hold.signal` aborted the wait).
 */
export function acquireLease(
  client: ScriptClient,
  keys: CoordKeys,
  owner: string,
  hold: ResolvedHold,
  log: ConsumerLogger,
  onEnd: (lease: HeldLease) => void,
): Promise<HeldLease | null> {
  return pollFor(
    async () => {
      const { reply, sentAt } = await acquireOnce(client, keys, owner, hold.ttlMs);
      if (!reply.ok || reply.token === null) return null;
      const lease: HeldLease = new HeldLease(client, keys, owner, reply.token, reply.exp, sentAt, hold, log, () => onEnd(lease));
      return lease.signal.aborted ? null : lease; // born lost (its reply came after its deadline): being released; try again
    },
    hold.waitMs,
    waitPollMs(hold.ttlMs),
    hold.signal,
  );
}
