/**
 * How many claim/complete rounds a consumer keeps in flight, and how many jobs each claim asks
 * for (docs/queue.md, "Rounds in flight").
 *
 * A busy consumer's claims can take its whole capacity in one round: then Valkey runs that
 * round's scripts while the client waits, and the client runs the jobs while Valkey waits. Split
 * into `split` shares, up to `split` claims are in flight at once, so one round's scripts run
 * while the jobs of another run their handlers. Smaller claims cost more script calls per job,
 * so the split pays only when both sides have a core to work on: the sizer measures it. While
 * the loop is saturated (its claims come back full), it compares the completion rate of its
 * current split with a neighbour's (epochs of at least 16 rounds and 50 ms; a probe in the second
 * epoch, then in one epoch of eight), and keeps the
 * faster one (moving to a larger split only for a gain of at least 3%, since it costs CPU). A
 * loop that is not saturated (the queue ran dry, or handlers are the bottleneck) goes back to
 * one share: the cheapest, and what light load needs; saturated again, it starts over from two
 * shares (capacity 8 or more; measured faster than one on a 2-core machine at concurrency 10 and
 * 50, docs/benchmarks.md).
 */
export class RoundSizer {
  private split = 1;
  private readonly maxSplit: number;
  /** Where a saturated loop starts: two shares once the capacity is 8 or more, else one. */
  private readonly initial: number;
  /** Set while the loop is not saturated (one share, nothing measured). */
  private resting = false;
  private readonly fixed: boolean;
  /** The last measured completion rate (per ms) of each split, and the epoch it was measured in. */
  private readonly rates = new Map<number, { rate: number; epoch: number }>();
  private epoch = 0;
  private started = 0;
  private done = 0;
  private claims = 0;
  private full = 0;
  private rounds = 0;
  /** The split to return to after a probe of a neighbour, or 0 when not probing. */
  private home = 0;

  /**
   * `capacity`: concurrency + prefetch. `rounds`: a fixed split (1..4), or 'adaptive' (the
   * default): between 1 and 3 (1 when the capacity is below 4: shares of one job gain nothing).
   */
  constructor(
    private readonly capacity: number,
    rounds: number | 'adaptive' = 'adaptive',
    private readonly now: () => number = Date.now,
  ) {
    this.fixed = rounds !== 'adaptive';
    this.maxSplit = this.fixed ? Math.max(1, Math.min(4, Number(rounds), capacity)) : capacity >= 4 ? 3 : 1;
    this.initial = this.fixed ? this.maxSplit : capacity >= 8 ? 2 : 1;
    this.split = this.initial;
    this.started = now();
  }

  /** The most jobs one claim asks for. */
  get share(): number {
    return Math.min(1000, Math.ceil(this.capacity / this.split));
  }

  /** The most rounds in flight: the claims of every share, plus one that only completes. */
  get maxRounds(): number {
    return this.split + 1;
  }

  /** The current split (shares of the capacity). */
  get current(): number {
    return this.split;
  }

  /** One round ended: it asked for `asked` jobs, got `got`, and completed `completed`. */
  record(asked: number, got: number, completed: number): void {
    this.done += completed;
    this.rounds++;
    if (asked > 0) {
      this.claims++;
      if (got === asked) this.full++;
    }
    if (this.fixed || this.rounds < 16) return;
    const t = this.now();
    if (t - this.started < 50) return;
    this.endEpoch(this.done / (t - this.started), this.claims > 0 && this.full >= 0.8 * this.claims);
    this.started = t;
    this.done = this.claims = this.full = this.rounds = 0;
  }

  private endEpoch(rate: number, saturated: boolean): void {
    this.epoch++;
    if (!saturated) {
      this.split = 1;
      this.home = 0;
      this.rates.clear();
      this.epoch = 0;
      this.resting = true;
      return;
    }
    if (this.resting) {
      // Saturated again: back to the starting split, and the measuring starts over.
      this.resting = false;
      this.split = this.initial;
      this.epoch = 0;
      return;
    }
    this.rates.set(this.split, { rate, epoch: this.epoch });
    if (this.home > 0) {
      // A probe epoch ended: keep the neighbour if it was faster (by 3% to go up), else go home.
      const home = this.rates.get(this.home)?.rate ?? 0;
      const better = this.split > this.home ? rate > home * 1.03 : rate >= home;
      if (!better) this.split = this.home;
      this.home = 0;
      return;
    }
    // Right after the first epoch, then every eighth, probe the neighbour whose figure is the
    // oldest (or missing): at most one epoch in eight runs a split that may be slower.
    if (this.epoch % 8 !== 1) return;
    const up = this.split < this.maxSplit ? this.split + 1 : 0;
    const down = this.split > 1 ? this.split - 1 : 0;
    const age = (s: number): number => (s === 0 ? -1 : this.epoch - (this.rates.get(s)?.epoch ?? -1e9));
    const next = age(up) >= age(down) ? up : down;
    if (next === 0) return;
    this.home = this.split;
    this.split = next;
  }
}
