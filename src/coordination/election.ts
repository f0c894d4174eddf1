import { CoordinationLostError } from '../core/errors.js';
import type { ConsumerLogger } from '../core/logger.js';
import type { CoordKeys } from '../core/keys.js';
import type { ScriptClient } from '../core/scripts.js';
import type { LeaseReply } from '../core/wire/index.js';
import { campaignPollMs } from './coordination-options.js';
import type { Election, ElectionOptions, LeaderTerm } from './coordination-types.js';
import { logText } from './keeper.js';
import { HeldLease, acquireOnce } from './lease.js';

/** The live term: its lease, and what its holder sees. */
interface Term {
  readonly lease: HeldLease;
  readonly view: LeaderTerm;
  resigned: boolean;
}

/**
 * A campaign for one role (the lease `emq:{co:<role>}:lease`): while not leading it tries to
 * acquire every min(ttl/4, 500 ms); a win is a term (the lease, renewed every ttl/3 by its
 * keeper); when the term ends (lost, resigned) it campaigns again — after two poll intervals
 * when it resigned, so another candidate can take the role. A crashed leader's lease expires at
 * most ttl after its last renewal: hand-over takes at most ttl + one poll interval.
 */
export class Campaign implements Election {
  private current?: Term;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private waiters: { resolve: (t: LeaderTerm) => void; reject: (e: unknown) => void }[] = [];
  private readonly pollMs: number;
  private stopping?: Promise<void>;

  constructor(
    private readonly client: ScriptClient,
    private readonly keys: CoordKeys,
    private readonly owner: string,
    private readonly ttlMs: number,
    private readonly onElected: ElectionOptions['onElected'],
    private readonly log: ConsumerLogger,
    private readonly onStop: () => void,
  ) {
    this.pollMs = campaignPollMs(ttlMs);
    this.schedule(0);
  }

  /** The role campaigned for. */
  get role(): string {
    return this.keys.name;
  }

  /** True while this process holds a live term (the deadline is checked). */
  isLeader(): boolean {
    return this.current !== undefined && !this.current.lease.signal.aborted;
  }

  /** The live term, if this process leads now. */
  term(): LeaderTerm | undefined {
    return this.isLeader() ? this.current!.view : undefined;
  }

  /** The live term, or the next one won; rejects (EMQ_LEASE_LOST) when the election stops first. */
  elected(): Promise<LeaderTerm> {
    const now = this.term();
    if (now) return Promise.resolve(now);
    if (this.stopped) return Promise.reject(this.stoppedError());
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** Stops campaigning and resigns a live term (idempotent). */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.stopped = true;
      clearTimeout(this.timer);
      for (const w of this.waiters.splice(0)) w.reject(this.stoppedError());
      this.onStop();
      const t = this.current;
      if (t) await t.lease.release().catch((e: unknown) => this.log.warn(`${this.what()}: resigning at stop failed: ${logText(e)}`));
    })();
    return this.stopping;
  }

  private what(): string {
    return `election "${this.role}"`;
  }

  private stoppedError(): CoordinationLostError {
    return new CoordinationLostError(`${this.what()}: stopped`);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), ms);
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.isLeader()) return;
    try {
      const { reply, sentAt } = await acquireOnce(this.client, this.keys, this.owner, this.ttlMs);
      if (reply.ok && reply.token !== null) {
        this.win(reply, reply.token, sentAt);
        return;
      }
    } catch (err) {
      this.log.warn(`${this.what()}: campaigning failed (${logText(err)}); retrying`);
    }
    this.schedule(this.pollMs);
  }

  private win(reply: LeaseReply, token: bigint, sentAt: number): void {
    const hold = { ttlMs: this.ttlMs, autoRenew: true, waitMs: 0, limit: 1 };
    const lease: HeldLease = new HeldLease(this.client, this.keys, this.owner, token, reply.exp, sentAt, hold, this.log, () => this.ended(term));
    const role = this.role;
    const term: Term = {
      lease,
      resigned: false,
      view: {
        role,
        token,
        get signal() {
          return lease.signal;
        },
        resign: () => {
          term.resigned = true;
          return lease.release();
        },
      },
    };
    if (lease.signal.aborted) {
      // Born lost: the acquire's reply came after its own local deadline (a stall, an outage that
      // queued the call). Not a term: its lease is being released; campaign on.
      this.schedule(this.pollMs);
      return;
    }
    this.current = term;
    if (this.stopped) {
      void lease.release().catch(() => undefined); // stop() ran while the acquire was in flight
      return;
    }
    for (const w of this.waiters.splice(0)) w.resolve(term.view);
    const onElected = this.onElected;
    if (!onElected) return;
    void (async () => onElected(term.view))().catch((err: unknown) => {
      this.log.error(`${this.what()}: onElected failed; resigning term ${token}`, err);
      void term.view.resign().catch(() => undefined);
    });
  }

  private ended(term: Term): void {
    if (this.current !== term) return;
    this.current = undefined;
    this.schedule(term.resigned ? 2 * this.pollMs : this.pollMs);
  }
}
