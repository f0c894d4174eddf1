/**
 * In-process single flight: concurrent callers of `run` with the same key share one execution of
 * the first caller's function, and all of them get its result (or its error).
 */
export class SingleFlight {
  private readonly flights = new Map<string, Promise<unknown>>();

  /** Runs `fn` unless a flight for `key` is in the air, in which case joins it. */
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const inFlight = this.flights.get(key);
    if (inFlight) return inFlight as Promise<T>;
    // fn starts on the next microtask, after the flight is registered, so even a function that
    // throws at once is cleared from the map.
    const p: Promise<T> = Promise.resolve()
      .then(fn)
      .finally(() => {
        if (this.flights.get(key) === p) this.flights.delete(key);
      });
    this.flights.set(key, p);
    return p;
  }

  /** True when a flight for `key` is in the air. */
  has(key: string): boolean {
    return this.flights.has(key);
  }

  /** How many flights are in the air. */
  get size(): number {
    return this.flights.size;
  }
}
