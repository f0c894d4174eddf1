import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { InvalidOptionError } from '../core/errors.js';
import { boolOpt, intIn, keySet, refuseUnknownKeys } from '../core/known-keys.js';
import type { ConsumerLogger } from '../core/logger.js';
import { COORD_TTL_MS, SEMAPHORE_MAX_LIMIT } from '../core/wire/index.js';
import type { CoordinationOptions, ElectionOptions, LeaseOptions, SemaphoreOptions } from './coordination-types.js';

/** Longest wait of tryAcquire / semaphore (a day). */
const MAX_WAIT_MS = 86_400_000;
/** Longest owner: a permit's holder id `<owner>.<n>` must stay within the scripts' 64 bytes. */
const MAX_OWNER = 48;
/** Default lease of an election. */
export const DEFAULT_ELECTION_TTL_MS = 5000;

/** A lease or permit request, checked. */
export interface ResolvedHold {
  readonly ttlMs: number;
  readonly autoRenew: boolean;
  readonly waitMs: number;
  readonly signal?: AbortSignal;
  /** Semaphores only (1 for a lease). */
  readonly limit: number;
}

/** The service's options, checked. */
export interface ResolvedService {
  readonly owner: string;
  readonly logger: ConsumerLogger;
}

const silent: ConsumerLogger = { warn: () => undefined, error: () => undefined };
const LEASE_KEYS = keySet<LeaseOptions>({ ttlMs: true, autoRenew: true, waitMs: true, signal: true });
const SEMAPHORE_KEYS = keySet<SemaphoreOptions>({ limit: true, ttlMs: true, autoRenew: true, waitMs: true, signal: true });
const ELECTION_KEYS = keySet<ElectionOptions>({ ttlMs: true, onElected: true });
const SERVICE_KEYS = keySet<CoordinationOptions>({ logger: true, owner: true });

const ttlOf = (v: unknown, what: string): number => intIn(v, COORD_TTL_MS.min, COORD_TTL_MS.max, what);

function signalOf(v: unknown, what: string): AbortSignal | undefined {
  if (v === undefined || v instanceof AbortSignal) return v;
  throw new InvalidOptionError(`${what} must be an AbortSignal`);
}

function holdOf(o: LeaseOptions | SemaphoreOptions, what: string, limit: number): ResolvedHold {
  boolOpt(o.autoRenew, `${what}.autoRenew`);
  return {
    ttlMs: ttlOf(o.ttlMs, `${what}.ttlMs`),
    autoRenew: o.autoRenew ?? true,
    waitMs: o.waitMs === undefined ? 0 : intIn(o.waitMs, 0, MAX_WAIT_MS, `${what}.waitMs`),
    signal: signalOf(o.signal, `${what}.signal`),
    limit,
  };
}

/** Checks tryAcquire's options (EMQ_BAD_OPTION, before any I/O). */
export function resolveLeaseOptions(o: LeaseOptions): ResolvedHold {
  refuseUnknownKeys(o, LEASE_KEYS, 'lease options');
  if (o === undefined) throw new InvalidOptionError('lease options are required ({ ttlMs })');
  return holdOf(o, 'lease options', 1);
}

/** Checks semaphore's options (EMQ_BAD_OPTION, before any I/O). */
export function resolveSemaphoreOptions(o: SemaphoreOptions): ResolvedHold {
  refuseUnknownKeys(o, SEMAPHORE_KEYS, 'semaphore options');
  if (o === undefined) throw new InvalidOptionError('semaphore options are required ({ limit, ttlMs })');
  return holdOf(o, 'semaphore options', intIn(o.limit, 1, SEMAPHORE_MAX_LIMIT, 'semaphore options.limit'));
}

/** Checks elect's options (EMQ_BAD_OPTION, before any I/O). */
export function resolveElectionOptions(o: ElectionOptions | undefined): { ttlMs: number; onElected?: ElectionOptions['onElected'] } {
  refuseUnknownKeys(o, ELECTION_KEYS, 'election options');
  if (o?.onElected !== undefined && typeof o.onElected !== 'function') throw new InvalidOptionError('election options.onElected must be a function');
  return { ttlMs: o?.ttlMs === undefined ? DEFAULT_ELECTION_TTL_MS : ttlOf(o.ttlMs, 'election options.ttlMs'), onElected: o?.onElected };
}

/** Checks the service's options; the default owner is `<host>.<pid>.<random>` (host cut to 20 of `[A-Za-z0-9_-]`). */
export function resolveServiceOptions(o: CoordinationOptions | undefined): ResolvedService {
  refuseUnknownKeys(o, SERVICE_KEYS, 'CoordinationService options');
  const owner = o?.owner ?? `${hostname().replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 20) || 'host'}.${process.pid}.${randomBytes(4).toString('hex')}`;
  if (typeof owner !== 'string' || owner.length < 1 || owner.length > MAX_OWNER || !/^[\x21-\x7e]+$/.test(owner)) {
    throw new InvalidOptionError(`CoordinationService options.owner must be 1..${MAX_OWNER} printable ASCII characters without spaces`);
  }
  const logger = o?.logger ?? silent;
  if (typeof logger.warn !== 'function' || typeof logger.error !== 'function') throw new InvalidOptionError('CoordinationService options.logger must have warn and error');
  return { owner, logger };
}

/** The poll interval of a wait: ~ttl/10, at least 50 ms, at most 500 ms. */
export const waitPollMs = (ttlMs: number): number => Math.min(500, Math.max(50, Math.floor(ttlMs / 10)));

/** The poll interval of a candidate that does not lead: min(ttl/4, 500 ms). */
export const campaignPollMs = (ttlMs: number): number => Math.min(500, Math.floor(ttlMs / 4));
