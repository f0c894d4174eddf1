import type { ConsumerLogger } from '../core/logger.js';
import type { CoordKeys } from '../core/keys.js';
import type { ScriptClient } from '../core/scripts.js';
import { coordWire } from '../core/wire/index.js';
import { waitPollMs, type ResolvedHold } from './coordination-options.js';
import type { Permit } from './coordination-types.js';
import { Held, pollFor } from './held.js';

/** A permit this process holds: renewed by its keeper, released by holder id. */
export class HeldPermit extends Held implements Permit {
  constructor(
    private readonly client: ScriptClient,
    private readonly keys: CoordKeys,
    readonly holder: string,
    sentAt: number,
    private readonly hold: ResolvedHold,
    log: ConsumerLogger,
    onEnd: () => void,
  ) {
    super(`permit "${keys.name}" (${holder})`, hold, sentAt, log, onEnd);
  }

  /** The semaphore's name. */
  get name(): string {
    return this.keys.name;
  }

  protected async sendRenew(): Promise<boolean> {
    return (await coordWire.semaphore(this.client, this.keys, 'renew', this.holder, 0, this.hold.ttlMs)).ok;
  }

  protected async sendRelease(): Promise<boolean> {
    return (await coordWire.semaphore(this.client, this.keys, 'release', this.holder, 0, 0)).ok;
  }
}

/**
 * Takes a permit of `keys.name` as `holder` (at most `hold.limit` holders), polling up to
 * `hold.waitMs`; null when all are taken throughout (or `hold.signal` aborted the wait).
 */
export function acquirePermit(
  client: ScriptClient,
  keys: CoordKeys,
  holder: string,
  hold: ResolvedHold,
  log: ConsumerLogger,
  onEnd: (permit: HeldPermit) => void,
): Promise<HeldPermit | null> {
  return pollFor(
    async () => {
      const sentAt = Date.now();
      const r = await coordWire.semaphore(client, keys, 'acquire', holder, hold.limit, hold.ttlMs);
      if (!r.ok) return null;
      const permit: HeldPermit = new HeldPermit(client, keys, holder, sentAt, hold, log, () => onEnd(permit));
      return permit.signal.aborted ? null : permit; // born lost: being released; try again
    },
    hold.waitMs,
    waitPollMs(hold.ttlMs),
    hold.signal,
  );
}
