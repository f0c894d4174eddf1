/**
 * The instances a load run talks to, as the client sees them: which answer, and what each did.
 * A base that fails (connection refused or reset, a 5xx) is skipped for `SKIP_MS` and then tried
 * again, so a load survives an instance's death and uses it again once it is back (restarted).
 */

/** How long a failed base is skipped before it is tried again (ms). */
export const SKIP_MS = 1000;

/** What happened to one placement request. */
export type PlacementOutcome = 'accepted' | 'repeat' | 'refused' | 'unreachable' | 'unavailable';

/** Sees every placement request's outcome (`placeAll`'s last argument). */
export interface PlacementObserver {
  /** `retriedFrom`: the base this order was first sent to, when it was accepted on another one. */
  result(base: string, outcome: PlacementOutcome, retriedFrom?: string): void;
}

/** Per base: requests by outcome, and orders accepted here after failing elsewhere. */
export interface BaseTally {
  accepted: number;
  repeat: number;
  refused: number;
  unreachable: number;
  unavailable: number;
  /** Orders accepted on this base after their first base failed. */
  retriedHere: number;
  /** Orders first sent here and accepted on another base. */
  retriedElsewhere: number;
}

/** The instances of a run: the live ones to send to, and a tally per base. */
export class InstancePool implements PlacementObserver {
  private readonly skipUntil = new Map<string, number>();
  readonly tally = new Map<string, BaseTally>();

  constructor(readonly bases: readonly string[]) {
    for (const b of bases) this.tally.set(b, { accepted: 0, repeat: 0, refused: 0, unreachable: 0, unavailable: 0, retriedHere: 0, retriedElsewhere: 0 });
  }

  /** The bases not being skipped (all of them when every one is). */
  live(): readonly string[] {
    const now = Date.now();
    const up = this.bases.filter((b) => (this.skipUntil.get(b) ?? 0) <= now);
    return up.length > 0 ? up : this.bases;
  }

  /** Skips `base` for `SKIP_MS`. */
  skip(base: string): void {
    this.skipUntil.set(base, Date.now() + SKIP_MS);
  }

  /** Counts one request's outcome; a failed base is skipped for a while. */
  result(base: string, outcome: PlacementOutcome, retriedFrom?: string): void {
    const t = this.tally.get(base);
    if (t) t[outcome]++;
    if (outcome === 'unreachable' || outcome === 'unavailable') this.skip(base);
    if (retriedFrom !== undefined && retriedFrom !== base) {
      if (t) t.retriedHere++;
      const from = this.tally.get(retriedFrom);
      if (from) from.retriedElsewhere++;
    }
  }

  /**
   * GETs `path` from the first live base that answers 2xx (skipping those that fail), with
   * `headers`; throws when none does.
   */
  async get<T>(path: string, headers: Record<string, string> = {}): Promise<{ base: string; body: T }> {
    const errors: string[] = [];
    for (const base of [...this.live(), ...this.bases.filter((b) => !this.live().includes(b))]) {
      try {
        const res = await fetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(5000) });
        if (res.ok) return { base, body: (await res.json()) as T };
        errors.push(`${base}: ${res.status}`);
        if (res.status >= 500) this.skip(base);
      } catch (err) {
        errors.push(`${base}: ${err instanceof Error ? err.message : String(err)}`);
        this.skip(base);
      }
    }
    throw new Error(`GET ${path}: no instance answered (${errors.join('; ')})`);
  }

  /** One line per base: what its requests did. */
  report(): string {
    return [...this.tally.entries()]
      .map(([b, t]) => `  ${b}: ${t.accepted} accepted, ${t.repeat} repeats, ${t.refused} refused, ${t.unreachable + t.unavailable} errors (${t.unreachable} unreachable, ${t.unavailable} 5xx), ${t.retriedElsewhere} retried elsewhere, ${t.retriedHere} taken over from another`)
      .join('\n');
  }
}
