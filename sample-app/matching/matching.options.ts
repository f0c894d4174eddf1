/** How the book holders run: leases, snapshots and the retention of the shard logs. */

/** The options of the book holders (`AppOptions.matching`). */
export interface MatchingOptions {
  /** Lease of a shard's leadership (ms): a dead holder's shard moves within this plus one poll (≤ 500 ms). */
  readonly leaseMs: number;
  /** A snapshot is written after this many commands … */
  readonly snapshotEvery: number;
  /** … or this long (ms) after the previous one, when commands came in since. */
  readonly snapshotMs: number;
  /**
   * Shard log entries older than this (ms) are deleted (Bus retention `maxAgeMs`, no archive). It
   * must exceed `snapshotMs` by far: a rebuild needs the log after the latest snapshot; one hour
   * also keeps intake re-runs (the engine's horizon) and a verifier's replay possible.
   */
  readonly logRetentionMs: number;
}

/** The injection token of the `MatchingOptions`. */
export const MATCHING_OPTIONS = Symbol('MATCHING_OPTIONS');

/** Defaults: 2 s leases, a snapshot per 2,000 commands or 30 s, 1 h of log. */
export const DEFAULT_MATCHING: MatchingOptions = { leaseMs: 2000, snapshotEvery: 2000, snapshotMs: 30_000, logRetentionMs: 3_600_000 };

/** The election role of shard `shard`. */
export const shardRole = (shard: number): string => `exchange.shard.${shard}`;
