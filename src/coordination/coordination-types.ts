import type { ConsumerLogger } from '../core/logger.js';

/**
 * A held fenced lease (`CoordinationService.tryAcquire`). Two holders can overlap in time (a
 * paused holder does not know it lost); the `token` is what is guaranteed: greater than every
 * token issued for the name before.
 */
export interface Lease {
  /** The lease's name. */
  readonly name: string;
  /** The owner it is held by (the service's owner). */
  readonly owner: string;
  /** The fencing token: strictly greater than every token issued for this name before. */
  readonly token: bigint;
  /** Server-clock expiry of the last successful acquire/renew. */
  readonly expiresAt: Date;
  /**
   * Aborts (reason: `CoordinationLostError`, code 'EMQ_LEASE_LOST') when a renewal is refused, or
   * when the local deadline (last renew's local send time + ttl) passes without one — e.g. after
   * a SIGSTOP or a partition; also aborts on release(). Reading it checks the deadline first.
   */
  readonly signal: AbortSignal;
  /** Renews now; false (and the signal aborts) when lost. */
  renew(): Promise<boolean>;
  /** Releases (idempotent); another process may acquire at once. */
  release(): Promise<void>;
}

/** Options of `CoordinationService.tryAcquire`. */
export interface LeaseOptions {
  /** The lease in ms, 100..3600000: a crashed holder blocks the name at most this long. */
  ttlMs: number;
  /** Default true: renew every ttl/3 until release (or loss). */
  autoRenew?: boolean;
  /** Wait for the lease up to this long (polls ~ttl/10, min 50 ms, max 500 ms); default 0 = try once. 0..86400000. */
  waitMs?: number;
  /** Aborts the wait (tryAcquire then answers null); once the lease is held, aborting it releases the lease. */
  signal?: AbortSignal;
}

/** Options of `CoordinationService.semaphore`. */
export interface SemaphoreOptions {
  /** The most holders at once, 1..100000; every caller of one name must pass the same. */
  limit: number;
  /** The permit in ms, 100..3600000: a crashed holder's permit is counted out this long after its last renewal. */
  ttlMs: number;
  /** Default true: renew every ttl/3 until release (or loss). */
  autoRenew?: boolean;
  /** Wait for a permit up to this long (polls like tryAcquire); default 0 = try once. */
  waitMs?: number;
  /** Aborts the wait (semaphore then answers null); once a permit is held, aborting it releases it. */
  signal?: AbortSignal;
}

/** A held permit of a counting semaphore. */
export interface Permit {
  /** The semaphore's name. */
  readonly name: string;
  /** This permit's holder id (`<owner>.<n>`). */
  readonly holder: string;
  /** Aborts (code 'EMQ_LEASE_LOST') when a renewal is refused or the local deadline passes; also on release(). */
  readonly signal: AbortSignal;
  /** Renews now; false (and the signal aborts) when lost. */
  renew(): Promise<boolean>;
  /** Releases (idempotent): the permit is free for another holder at once. */
  release(): Promise<void>;
}

/** A leadership term: the lease of role `role` held by this process. */
export interface LeaderTerm {
  /** The role led. */
  readonly role: string;
  /** The term's fencing token: a later term (here or elsewhere) has a greater one. */
  readonly token: bigint;
  /** Aborts (code 'EMQ_LEASE_LOST') when the term ends: lost, resigned, or the election stopped. */
  readonly signal: AbortSignal;
  /** Ends the term and releases the role's lease, so another candidate can win at once. */
  resign(): Promise<void>;
}

/** Options of `CoordinationService.elect`. */
export interface ElectionOptions {
  /** The role's lease in ms, 100..3600000 (default 5000): hand-over after a crash takes at most ttl + min(ttl/4, 500 ms). */
  ttlMs?: number;
  /** Called on every election win (errors and rejections are logged, and the term is resigned). */
  onElected?: (term: LeaderTerm) => void | Promise<void>;
}

/** A campaign for a role (`CoordinationService.elect`). */
export interface Election {
  /** The role campaigned for. */
  readonly role: string;
  /** True while this process holds a live term. */
  isLeader(): boolean;
  /** The live term, if this process leads now. */
  term(): LeaderTerm | undefined;
  /** Resolves with the live term when this process leads now, else with the next term won; rejects (EMQ_LEASE_LOST) when the election stops first. */
  elected(): Promise<LeaderTerm>;
  /** Stops campaigning and resigns a live term. */
  stop(): Promise<void>;
}

/** What `CoordinationService.read` finds for a name. */
export interface LeaseState {
  /** True while an owner holds it unexpired (server clock). */
  readonly held: boolean;
  /** The current or last holder; `""` once released or never held. */
  readonly owner: string;
  /** The current or last token; null when none was ever issued. */
  readonly token: bigint | null;
  /** Server-clock expiry of the current or last holder; null once released or never held. */
  readonly expiresAt: Date | null;
}

/** Options of `new CoordinationService(conn, options)`. */
export interface CoordinationOptions {
  /** Where lost renewals and failed `onElected` calls are reported (default: silent). */
  logger?: ConsumerLogger;
  /** This service's owner identity: 1..48 printable ASCII without spaces (default `<host>.<pid>.<random>`). */
  owner?: string;
}
