/**
 * An abort signal made on first use, for a job or an event: most handlers never read `signal`, and an
 * `AbortController` per job or event is a measurable share of a busy loop's CPU. `abort` before
 * the first read is remembered, so a signal read later is already aborted with the same reason.
 */
export class LazyAbort {
  private ctrl?: AbortController;
  private reason?: unknown;
  private aborted = false;

  /** The signal (created now if nobody asked before). */
  get signal(): AbortSignal {
    if (!this.ctrl) {
      this.ctrl = new AbortController();
      if (this.aborted) this.ctrl.abort(this.reason);
    }
    return this.ctrl.signal;
  }

  /** Aborts with `reason` (the first call wins). */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.ctrl?.abort(reason);
  }
}
