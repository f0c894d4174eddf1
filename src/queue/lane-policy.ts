import { InvalidOptionError } from '../core/errors.js';
import { intIn, keySet, optionPath, refuseRenamedKeys, refuseUnknownKeys } from '../core/known-keys.js';
import type { RateLimit } from './base-options.js';

/** What applies to one fair lane of a queue. */
export interface LaneSettings {
  /** At most this many jobs of the lane active at once, fleet-wide, counted on the server (1..100,000). */
  readonly concurrency?: number;
  /** Jobs the lane gets per turn of the rotation (1..1000). Default 1. */
  readonly weight?: number;
  /** At most `max` jobs of the lane claimed per `intervalMs` (on the server clock; `window`: `fixed` or `sliding`). */
  readonly rateLimit?: RateLimit;
}

/**
 * The fair-lane policy of a queue (`QueueDefaults.lanes`): settings for every lane, and
 * `overrides` for named lanes (each a complete replacement of the shared settings' fields it
 * names, e.g. `{ concurrency: 2, overrides: { vip: { weight: 3 } } }` gives vip a cap of 2 and a
 * weight of 3). Stored in the queue's meta (`QueueService.setPolicy`, or declared by a consumer at
 * start) and enforced by every claim of every runtime (docs/queue.md).
 */
export interface LaneOptions extends LaneSettings {
  /** Settings of named lanes (at most 1000), over the shared ones. */
  readonly overrides?: Readonly<Record<string, LaneSettings>>;
}

const SETTINGS_KEYS = keySet<LaneSettings>({ concurrency: true, weight: true, rateLimit: true });
const OPTION_KEYS = keySet<LaneOptions>({ concurrency: true, weight: true, rateLimit: true, overrides: true });
const RATE_KEYS = keySet<RateLimit>({ max: true, intervalMs: true, window: true });
const LANE_RE = /^[A-Za-z0-9_.-]{1,100}$/;
/** Most named lanes in `overrides` (the claim script's bound). */
const MAX_OVERRIDES = 1000;
/** The queue option renamed from "groups" to "lanes" (issue 36): refused with a hint, never ignored. */
export const RENAMED_LANE_OPTIONS: Readonly<Record<string, string>> = { groups: 'lanes' };

/**
 * Validates a rate limit (the queue's `rateLimit` or a lane's): an object of `max`
 * (1..1,000,000), `intervalMs` (1..86,400,000) and optionally `window` (`fixed` | `sliding`);
 * any other key is refused, as out-of-range values are (`InvalidOptionError`). `what` is its path
 * in the options it came in (`queues.orders.rateLimit`), named by every refusal.
 */
export function checkRateLimit(r: RateLimit, what = 'rateLimit'): void {
  if (typeof r !== 'object' || r === null || Array.isArray(r)) throw new InvalidOptionError(`${what} must be { max, intervalMs, window? }`);
  refuseUnknownKeys(r, RATE_KEYS, 'rateLimit', { path: what });
  intIn(r.max, 1, 1_000_000, `${what}.max`);
  intIn(r.intervalMs, 1, 86_400_000, `${what}.intervalMs`);
  if (r.window !== undefined && r.window !== 'fixed' && r.window !== 'sliding') throw new InvalidOptionError(`${what}.window must be "fixed" or "sliding", got ${String(r.window)}`);
}

function checkSettings(s: LaneSettings, keys: ReadonlySet<string>, what: string): void {
  refuseUnknownKeys(s, keys, 'lane options', { path: what });
  if (s.concurrency !== undefined) intIn(s.concurrency, 1, 100_000, `${what}.concurrency`);
  if (s.weight !== undefined) intIn(s.weight, 1, 1000, `${what}.weight`);
  if (s.rateLimit !== undefined) checkRateLimit(s.rateLimit, `${what}.rateLimit`);
}

/**
 * Validates a queue's lane policy: unknown keys and out-of-range values are `InvalidOptionError`,
 * named by their path (`at`: where the policy was given, e.g. `queues.orders.lanes`).
 */
export function checkLaneOptions(o: LaneOptions, at = 'lanes'): void {
  checkSettings(o, OPTION_KEYS, at);
  if (o.overrides === undefined) return;
  const ov = `${at}.overrides`;
  if (typeof o.overrides !== 'object' || o.overrides === null || Array.isArray(o.overrides)) throw new InvalidOptionError(`${ov} must be an object of lane name → settings`);
  const names = Object.keys(o.overrides);
  if (names.length > MAX_OVERRIDES) throw new InvalidOptionError(`${ov} names at most ${MAX_OVERRIDES} lanes`);
  for (const lane of names) {
    if (!LANE_RE.test(lane)) throw new InvalidOptionError(`${ov}: "${lane}" is not a lane name (1..100 of A-Z a-z 0-9 _ . -)`);
    checkSettings(o.overrides[lane], SETTINGS_KEYS, `${ov}.${lane}`);
  }
}

const entry = (who: string, s: LaneSettings): string =>
  `${who}=${s.concurrency ?? 0},${s.weight ?? 1},${s.rateLimit?.max ?? 0},${s.rateLimit?.intervalMs ?? 0}${s.rateLimit?.window === 'sliding' ? ',sliding' : ''}`;

/**
 * The wire form of a lane policy (policy.lua's text, stored in meta `gpol`):
 * `*=<cap>,<weight>,<rate max>,<rate ms>` then one `g:<lane>=…` entry per override (the wire's
 * `g:` entries), merged over the shared settings (0 = none); an entry whose rate limit slides
 * ends `,sliding` (a fixed one is written as before, so its text is unchanged).
 */
export function lanePolicyWire(o: LaneOptions): string {
  checkLaneOptions(o);
  const shared: LaneSettings = { concurrency: o.concurrency, weight: o.weight, rateLimit: o.rateLimit };
  const parts = [entry('*', shared)];
  for (const [lane, s] of Object.entries(o.overrides ?? {})) parts.push(entry(`g:${lane}`, { ...shared, ...s }));
  return parts.join(' ');
}

/** A queue's policy as `QueueService.setPolicy` takes it: the `rateLimit` and `lanes` options. */
export interface PolicyOptions {
  /** The queue-wide rate limit (absent: none). */
  readonly rateLimit?: RateLimit;
  /** The fair-lane policy (absent: none: every lane weight 1, no cap or limit). */
  readonly lanes?: LaneOptions;
}

/**
 * Checks a policy's options as the queue options are checked (InvalidOptionError); `what` names
 * where they were given, for the hint on a renamed key (`groups`: now `lanes`), and `path` their
 * place in it (`queues.orders`), named by every refusal.
 */
export function checkPolicyOptions(d: PolicyOptions, what = 'policy options', path?: string): void {
  refuseRenamedKeys(d, RENAMED_LANE_OPTIONS, what, path);
  if (d.rateLimit !== undefined) checkRateLimit(d.rateLimit, optionPath(path, 'rateLimit'));
  if (d.lanes !== undefined) checkLaneOptions(d.lanes, optionPath(path, 'lanes'));
}
