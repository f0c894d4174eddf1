import { InvalidOptionError } from '../core/errors.js';
import { keySet, refuseNonObject, refuseUnknownKeys } from '../core/known-keys.js';
import type { RetentionPolicy } from './bus-types.js';

/** Default age bound of a topic's archive when its policy names none: 7 days (docs/bus.md). */
export const DEFAULT_ARCHIVE_MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000;
/** Default byte bound of a topic's archive when its policy names none: 64 MiB (docs/bus.md). */
export const DEFAULT_ARCHIVE_MAX_BYTES = 64 * 1024 * 1024;

const MAX_LEN = 1_000_000_000;
const MAX_AGE_MS = 3_153_600_000_000;
const MAX_ARCHIVE_BYTES = 2 ** 40;
const POLICY_KEYS = keySet<RetentionPolicy>({ maxLen: true, maxAgeMs: true, archiveMaxAgeMs: true, archiveMaxBytes: true, archive: true, unbounded: true });

/** A policy as `retention.lua` stores it: absent bounds are none; `archiveMaxBytes` 0 = no archive. */
export interface StoredPolicy {
  readonly maxLen?: number;
  readonly maxAgeMs?: number;
  readonly archiveMaxAgeMs?: number;
  readonly archiveMaxBytes: number | 'unbounded';
}

const optInt = (v: unknown, lo: number, hi: number, what: string, infinite = false): number | undefined => {
  if (v === undefined || (infinite && v === Infinity)) return v;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < lo || v > hi) {
    throw new InvalidOptionError(`${what} must be an integer in ${lo}..${hi}${infinite ? ' or Infinity' : ''}, got ${String(v)}`);
  }
  return v;
};

const optBool = (v: unknown, what: string): boolean | undefined => {
  if (v !== undefined && typeof v !== 'boolean') throw new InvalidOptionError(`${what} must be a boolean`);
  return v;
};

/**
 * Checks a retention policy (unknown keys, ranges, contradictions: `InvalidOptionError`) and
 * resolves its archive bounds: an absent one gets its default (`DEFAULT_ARCHIVE_MAX_AGE_MS`,
 * `DEFAULT_ARCHIVE_MAX_BYTES`) unless `unbounded: true`; `Infinity` is no bound; `archive: false`
 * or `archiveMaxBytes: 0` turns the archive off (trimmed entries are deleted).
 */
export function resolvePolicy(policy: unknown, what = 'retention policy'): StoredPolicy {
  refuseNonObject(policy, what);
  refuseUnknownKeys(policy, POLICY_KEYS, what);
  const p = policy as RetentionPolicy;
  const maxLen = optInt(p.maxLen, 1, MAX_LEN, `${what}: maxLen`);
  const maxAgeMs = optInt(p.maxAgeMs, 1, MAX_AGE_MS, `${what}: maxAgeMs`);
  const archiveMaxAgeMs = optInt(p.archiveMaxAgeMs, 1, MAX_AGE_MS, `${what}: archiveMaxAgeMs`, true);
  const archiveMaxBytes = optInt(p.archiveMaxBytes, 0, MAX_ARCHIVE_BYTES, `${what}: archiveMaxBytes`, true);
  const archive = optBool(p.archive, `${what}: archive`);
  const unbounded = optBool(p.unbounded, `${what}: unbounded`);
  const off = archive === false || archiveMaxBytes === 0;
  if (off && (archive === true || (archiveMaxBytes ?? 0) !== 0 || archiveMaxAgeMs !== undefined || unbounded === true)) {
    throw new InvalidOptionError(`${what}: a topic without an archive (archive: false or archiveMaxBytes: 0) takes no other archive bound`);
  }
  if (off) return { maxLen, maxAgeMs, archiveMaxBytes: 0 };
  return {
    maxLen,
    maxAgeMs,
    archiveMaxAgeMs: archiveMaxAgeMs === Infinity ? undefined : (archiveMaxAgeMs ?? (unbounded ? undefined : DEFAULT_ARCHIVE_MAX_AGE_MS)),
    archiveMaxBytes: archiveMaxBytes === Infinity ? 'unbounded' : (archiveMaxBytes ?? (unbounded ? 'unbounded' : DEFAULT_ARCHIVE_MAX_BYTES)),
  };
}

/** The policy fields of a topic's meta hash, in the order `readPolicy` takes them. */
export const POLICY_FIELDS = ['maxLen', 'maxAgeMs', 'archiveMaxAgeMs', 'archiveMaxBytes'] as const;

/** A stored policy (the HMGET of `POLICY_FIELDS`) as `getRetention` hands it out. */
export function readPolicy(raw: readonly (string | null)[]): RetentionPolicy {
  const num = (v: string | null | undefined): number | undefined => (v === null || v === undefined ? undefined : Number(v));
  const [maxLen, maxAgeMs, archiveMaxAgeMs, bytes] = raw;
  return {
    maxLen: num(maxLen),
    maxAgeMs: num(maxAgeMs),
    archiveMaxAgeMs: num(archiveMaxAgeMs),
    archiveMaxBytes: bytes === 'unbounded' ? undefined : num(bytes),
    ...(bytes === 'unbounded' ? { unbounded: true } : {}),
  };
}

/** Mebibytes, for messages. */
export const mib = (bytes: number): string => `${Math.round((bytes / 1048576) * 10) / 10} MiB`;

/** The warnings a topic's stored policy earns (docs/bus.md, "Bounds by default"), keyed by kind. */
export function policyWarnings(topic: string, p: RetentionPolicy): { kind: string; message: string }[] {
  const out: { kind: string; message: string }[] = [];
  const name = JSON.stringify(topic);
  if (p.maxLen === undefined && p.maxAgeMs === undefined) {
    out.push({
      kind: 'log',
      message: `Bus topic ${name} has no retention: its log grows without bound. Set one with bus.setRetention(${name}, { maxLen: 10000 }) (or maxAgeMs), or the module option bus.defaultRetention.`,
    });
  }
  if (p.unbounded && p.archiveMaxBytes === undefined) {
    const age = p.archiveMaxAgeMs === undefined ? 'kept forever' : `bounded by age only (${p.archiveMaxAgeMs} ms)`;
    out.push({
      kind: 'archive',
      message: `Bus topic ${name}: its archive has no byte bound (${age}): every trimmed entry stays in Valkey. Set archiveMaxBytes, or archive: false to delete trimmed entries.`,
    });
  }
  return out;
}
