import { setTimeout as sleep } from 'node:timers/promises';
import type { ConsumerLogger } from '../core/logger.js';
import type { ResolvedHold } from './coordination-options.js';
import { Keeper, logText } from './keeper.js';

/**
 * What a held lease and a held permit share: the keeper (renewals, deadline, signal), an
 * idempotent release that aborts the signal first, the caller's signal linked to the release,
 * and the owner's bookkeeping hook `onEnd`, called once when the hold ends (released or lost).
 */
export abstract class Held {
  private readonly keeper: Keeper;
  private released?: Promise<void>;
  private ended = false;
  private readonly unlink: () => void;

  protected constructor(
    what: string,
    hold: ResolvedHold,
    sentAt: number,
    protected readonly log: ConsumerLogger,
    private readonly onEnd: () => void,
  ) {
    this.keeper = new Keeper(what, hold.ttlMs, sentAt, () => this.sendRenew(), log, hold.autoRenew, () => {
      void this.sendRelease().catch(() => undefined); // it may still be ours on the server: free it for the next
    });
    const own = this.keeper.signal;
    own.addEventListener('abort', () => this.end(), { once: true });
    if (own.aborted) queueMicrotask(() => this.end()); // the acquire's reply came after its own deadline
    const outer = hold.signal;
    const onOuter = (): void => void this.release().catch((e: unknown) => log.warn(`${what}: release failed: ${logText(e)}`));
    outer?.addEventListener('abort', onOuter, { once: true });
    this.unlink = () => outer?.removeEventListener('abort', onOuter);
    if (outer?.aborted) queueMicrotask(onOuter); // after the subclass's fields are set
  }

  /** Sends one renewal: true when still held. */
  protected abstract sendRenew(): Promise<boolean>;
  /** Sends the release (true when it was still held). */
  protected abstract sendRelease(): Promise<boolean>;

  /** Aborts (code 'EMQ_LEASE_LOST') when lost or released; reading it checks the local deadline. */
  get signal(): AbortSignal {
    return this.keeper.signal;
  }

  /** Renews now; false (and the signal aborts) when lost. */
  renew(): Promise<boolean> {
    return this.keeper.renew();
  }

  /** Releases (idempotent): aborts the signal, then frees it on the server. */
  release(): Promise<void> {
    this.released ??= (async () => {
      this.keeper.lose('released');
      await this.sendRelease();
    })();
    return this.released;
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.unlink();
    this.onEnd();
  }
}

/**
 * Tries `attempt` until it answers non-null, `waitMs` passes (then null) or `signal` aborts
 * (null), sleeping `pollMs` between tries. `waitMs` 0 tries once.
 */
export async function pollFor<T>(attempt: () => Promise<T | null>, waitMs: number, pollMs: number, signal?: AbortSignal): Promise<T | null> {
  const until = Date.now() + waitMs;
  for (;;) {
    if (signal?.aborted) return null;
    const got = await attempt();
    if (got !== null) return got;
    const left = until - Date.now();
    if (left <= 0) return null;
    try {
      await sleep(Math.min(pollMs, left), undefined, { signal });
    } catch {
      return null; // aborted while waiting
    }
  }
}
