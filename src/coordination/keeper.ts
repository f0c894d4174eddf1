import { escapeControls } from '../core/control-chars.js';
import { CoordinationLostError } from '../core/errors.js';
import { describeError } from '../core/reply-errors.js';
import type { ConsumerLogger } from '../core/logger.js';

/** An error as one log line, control characters escaped (a server's text reaches a terminal). */
export const logText = (err: unknown): string => escapeControls(describeError(err));

/** What a keeper renews: one server call, true when the holder still holds it. */
export type RenewOnce = () => Promise<boolean>;

/**
 * Keeps one lease or permit: renews it every ttl / 3 (when `autoRenew`), and aborts its signal
 * (reason: `CoordinationLostError`, EMQ_LEASE_LOST) when a renewal is refused, or when the local
 * deadline — the send time of the last successful acquire or renewal, plus the ttl — passes
 * without a newer one. The deadline is checked by a timer, at every renewal tick before anything
 * is sent, and at every read of `signal`: a process resumed after a SIGSTOP past its lease sees
 * an aborted signal before it acts, and sends nothing as the holder. Internal to src/coordination.
 */
export class Keeper {
  private readonly ctrl = new AbortController();
  private deadline: number;
  private renewTimer?: NodeJS.Timeout;
  private deadlineTimer?: NodeJS.Timeout;
  private renewing?: Promise<boolean>;

  constructor(
    /** What is kept, for messages: `lease "reports"`, `permit "exports"`. */
    private readonly what: string,
    private readonly ttlMs: number,
    /** Local ms (Date.now()) at which the acquire that gave it was sent. */
    sentAt: number,
    private readonly renewOnce: RenewOnce,
    private readonly log: ConsumerLogger,
    autoRenew: boolean,
    /** Called once when the deadline passes (not on a refusal or a release): free it on the server. */
    private readonly onExpired: () => void,
  ) {
    this.deadline = sentAt + ttlMs;
    this.armDeadline();
    if (autoRenew) this.scheduleRenew();
  }

  /** The signal, after a check of the local deadline (aborted now when it has passed). */
  get signal(): AbortSignal {
    this.checkDeadline();
    return this.ctrl.signal;
  }

  /** True until the signal aborted (after a check of the deadline). */
  get live(): boolean {
    return !this.signal.aborted;
  }

  /** Local ms after which the holder no longer certainly holds it. */
  get localDeadline(): number {
    return this.deadline;
  }

  /** Renews now: false (and the signal aborts) when it is lost. One renewal at a time. */
  renew(): Promise<boolean> {
    if (!this.live) return Promise.resolve(false);
    this.renewing ??= this.renewNow().finally(() => {
      this.renewing = undefined;
    });
    return this.renewing;
  }

  /** Aborts with `message` (the first reason wins) and stops the timers. */
  lose(message: string): void {
    clearTimeout(this.renewTimer);
    clearTimeout(this.deadlineTimer);
    if (!this.ctrl.signal.aborted) this.ctrl.abort(new CoordinationLostError(`${this.what}: ${message}`));
  }

  private async renewNow(): Promise<boolean> {
    const sent = Date.now();
    let ok: boolean;
    try {
      ok = await this.renewOnce();
    } catch (err) {
      // Not refused, not certain: the deadline timer aborts if no renewal succeeds in time.
      this.log.warn(`${this.what}: renewal failed (${logText(err)}); retrying until the local deadline`);
      return this.live;
    }
    if (this.ctrl.signal.aborted) return false;
    if (!ok) {
      this.lose('the renewal was refused: another holder has it, or it was released');
      return false;
    }
    this.deadline = sent + this.ttlMs;
    this.armDeadline();
    return true;
  }

  private scheduleRenew(): void {
    this.renewTimer = setTimeout(() => {
      // Late (a pause, a busy loop)? Past the deadline, send nothing: abort first.
      if (!this.live) return;
      void this.renew().finally(() => {
        if (!this.ctrl.signal.aborted) this.scheduleRenew();
      });
    }, Math.max(1, Math.floor(this.ttlMs / 3)));
  }

  private armDeadline(): void {
    clearTimeout(this.deadlineTimer);
    this.deadlineTimer = setTimeout(() => {
      this.checkDeadline();
      if (!this.ctrl.signal.aborted) this.armDeadline(); // a timer may fire a ms before the wall clock says so
    }, Math.max(1, this.deadline - Date.now()));
  }

  private checkDeadline(): void {
    if (this.ctrl.signal.aborted || Date.now() < this.deadline) return;
    this.lose(`its local deadline passed without a successful renewal (ttl ${this.ttlMs} ms)`);
    queueMicrotask(this.onExpired); // never inside a constructor: the holder may not be built yet
  }
}
