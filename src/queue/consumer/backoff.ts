/**
 * The back-off of a supervised loop after a failed call: 100 ms doubling to 5 s, reset by a
 * success. The back-off is its timer and nothing else: it holds the loop exactly while the timer
 * is armed, and ends when the timer fires, whatever `Date.now()` reads then (Node fires timers on
 * its cached loop time, often a millisecond before a deadline computed from `Date.now()`). So a
 * loop told `holding` can rely on `resume` being called: a refusal is never its last event.
 */
export class Backoff {
  private failures = 0;
  private timer?: NodeJS.Timeout;

  constructor(private readonly resume: () => void) {}

  /** Counts a failure and holds the loop; returns the delay (ms) before `resume` is called. */
  fail(): number {
    this.failures++;
    const delay = Math.min(50 * 2 ** this.failures, 5000);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.resume();
    }, delay);
    this.timer.unref();
    return delay;
  }

  /** A call succeeded: the next failure backs off from the start again. */
  succeeded(): void {
    this.failures = 0;
  }

  /** True while the loop is held, that is while the timer stands to resume it. */
  get holding(): boolean {
    return this.timer !== undefined;
  }

  /** Cancels the timer (the loop is stopping). */
  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
