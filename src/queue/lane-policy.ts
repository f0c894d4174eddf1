import { InvalidOptionError } from '../core/errors.js';
import { intIn, keySet, refuseUnknownKeys } from '../core/known-keys.js';
import type { RateLimit } from './base-options.js';

/** What applies to one group (fair lane) of a queue. */
export interface GroupSettings {
  /** At most this many jobs of the group active at once, fleet-wide, counted on the server (1..100,000). */
  readonly concurrency?: number;
  /** Jobs the group gets per turn of the rotation (1..1000). Default 1. */
  readonly weight?: number;
  /** At most `max` jobs of the group claimed per `intervalMs` (fixed windows on the server clock). */
  readonly rateLimit?: RateLimit;
}

/**
 * The fair-lane policy of a queue (`QueueDefaults.groups`): settings for every group, and
 * `overrides` for named groups (each a complete replacement of the shared settings' fields it
 * names, e.g. `{ concurrency: 2, overrides: { vip: { weight: 3 } } }` gives vip a cap of 2 and a
 * weight of 3). Every consumer of the queue sends it with each claim (docs/queue.md).
 */
export interface GroupOptions extends GroupSettings {
  /** Settings of named groups (at most 1000), over the shared ones. */
  readonly overrides?: Readonly<Record<string, GroupSettings>>;
}

const SETTINGS_KEYS = keySet<GroupSettings>({ concurrency: true, weight: true, rateLimit: true });
const OPTION_KEYS = keySet<GroupOptions>({ concurrency: true, weight: true, rateLimit: true, overrides: true });
const RATE_KEYS = keySet<RateLimit>({ max: true, intervalMs: true });
const GROUP_RE = /^[A-Za-z0-9_.-]{1,100}$/;
/** Most named groups in `overrides` (the claim script's bound). */
const MAX_OVERRIDES = 1000;

function checkSettings(s: GroupSettings, keys: ReadonlySet<string>, what: string): void {
  refuseUnknownKeys(s, keys, what);
  if (s.concurrency !== undefined) intIn(s.concurrency, 1, 100_000, `${what}.concurrency`);
  if (s.weight !== undefined) intIn(s.weight, 1, 1000, `${what}.weight`);
  if (s.rateLimit !== undefined) {
    refuseUnknownKeys(s.rateLimit, RATE_KEYS, `${what}.rateLimit`);
    intIn(s.rateLimit.max, 1, 1_000_000, `${what}.rateLimit.max`);
    intIn(s.rateLimit.intervalMs, 1, 86_400_000, `${what}.rateLimit.intervalMs`);
  }
}

/** Validates a queue's group policy: unknown keys and out-of-range values are `InvalidOptionError`. */
export function checkGroupOptions(o: GroupOptions): void {
  checkSettings(o, OPTION_KEYS, 'groups');
  if (o.overrides === undefined) return;
  if (typeof o.overrides !== 'object' || o.overrides === null || Array.isArray(o.overrides)) throw new InvalidOptionError('groups.overrides must be an object of group name → settings');
  const names = Object.keys(o.overrides);
  if (names.length > MAX_OVERRIDES) throw new InvalidOptionError(`groups.overrides names at most ${MAX_OVERRIDES} groups`);
  for (const g of names) {
    if (!GROUP_RE.test(g)) throw new InvalidOptionError(`groups.overrides: "${g}" is not a group name (1..100 of A-Z a-z 0-9 _ . -)`);
    checkSettings(o.overrides[g], SETTINGS_KEYS, `groups.overrides.${g}`);
  }
}

const entry = (who: string, s: GroupSettings): string =>
  `${who}=${s.concurrency ?? 0},${s.weight ?? 1},${s.rateLimit?.max ?? 0},${s.rateLimit?.intervalMs ?? 0}`;

/**
 * The wire form of a group policy (claim.lua ARGV[7]): `*=<cap>,<weight>,<rate max>,<rate ms>`
 * then one `g:<group>=…` entry per override, merged over the shared settings (0 = none).
 */
export function groupPolicyWire(o: GroupOptions): string {
  checkGroupOptions(o);
  const shared: GroupSettings = { concurrency: o.concurrency, weight: o.weight, rateLimit: o.rateLimit };
  const parts = [entry('*', shared)];
  for (const [g, s] of Object.entries(o.overrides ?? {})) parts.push(entry(`g:${g}`, { ...shared, ...s }));
  return parts.join(' ');
}

/**
 * A queue's policy as `QueueService.setPolicy` takes it: the `rateLimit` and `groups` options.
 *
 * @inline
 */
export interface PolicyOptions {
  readonly rateLimit?: RateLimit;
  readonly groups?: GroupOptions;
}

/** Checks a policy's options as the queue options are checked (InvalidOptionError). */
export function checkPolicyOptions(d: PolicyOptions): void {
  if (d.rateLimit !== undefined) {
    if (typeof d.rateLimit !== 'object' || d.rateLimit === null) throw new InvalidOptionError('rateLimit must be { max, intervalMs }');
    intIn(d.rateLimit.max, 1, 1_000_000, 'rateLimit.max');
    intIn(d.rateLimit.intervalMs, 1, 86_400_000, 'rateLimit.intervalMs');
  }
  if (d.groups !== undefined) checkGroupOptions(d.groups);
}
