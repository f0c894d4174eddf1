import type { EchoMqConnection } from '../protocol/connection.js';

/** What coherence applies to: the process's L1. */
export interface L1Target {
  /** Drops `key` of `ns` from L1 unless L1 holds a version newer than `ver`. */
  applyInvalidation(ns: string, key: string, ver: string): void;
  /** Drops every L1 entry of `ns` (the log was trimmed past this node's position). */
  dropNamespace(ns: string): void;
}

/**
 * Invalidations ride the Bus: announced to the namespace's retained invalidation log and
 * signalled for speed; every node applies them in order and keeps its position. (Being written.)
 */
export class Coherence {
  constructor(
    protected readonly conn: EchoMqConnection,
    protected readonly l1: L1Target,
    protected readonly pollMs: number,
  ) {}

  /** Announces that `keys` of `ns` were invalidated at version `ver`. */
  async announce(_ns: string, _keys: readonly string[], _ver: string): Promise<void> {}

  /** Starts following the invalidations of `ns` (idempotent). */
  watch(_ns: string): void {}

  /** Stops following; closes what it opened. */
  async close(): Promise<void> {}
}
