/**
 * Node fires a timer on its cached loop time, so `Date.now()` inside the callback can still read
 * before the deadline the timer was armed for. While the returned restore function has not been
 * called, `Date.now()` advances at half the speed of the timers' clock, so every timer fires
 * "early" as `Date.now()` sees it: a loop that gates on `Date.now()` after a timer shows it.
 */
export function slowClock(): () => void {
  const real = Date.now;
  const t0 = real();
  Date.now = () => t0 + Math.floor((real() - t0) / 2);
  return () => {
    Date.now = real;
  };
}
