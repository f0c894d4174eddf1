/**
 * A queue's stored policy on the wire (docs/protocol.md §5, "Policy lives in the data"):
 * `policy.lua` writes meta `rate` and `gpol`, every claim enforces them, and this module reads
 * them back and compares them.
 */
import { PROTOCOL_VERSION, runScript, type ScriptClient } from '../scripts.js';
import type { QueueKeys } from '../keys.js';

/**
 * A queue's stored policy (policy.lua; meta `rate` and `gpol`): claim.lua reads it and enforces it
 * on every claim, whichever runtime sends it (a claim carries no limits).
 */
export interface ClaimLimits {
  /**
   * At most `max` jobs per `intervalMs`, all consumers together: per fixed window (absent
   * `window`, or `fixed`), or in any `intervalMs`-long span (`sliding`).
   */
  readonly rateLimit?: { readonly max: number; readonly intervalMs: number; readonly window?: 'fixed' | 'sliding' };
  /** The lane policy text (`lanePolicyWire`; meta `gpol`, the wire's name). */
  readonly lanePolicy?: string;
}

/**
 * A queue's stored policy as read back: the limits, and the lanes paused fleet-wide (meta
 * `gpaused`; `QueueService.pauseLane`), present only when a lane is paused. A pause is an
 * operator's act, not a declared option: comparing policies (`samePolicy`) ignores it.
 */
export interface StoredPolicy extends ClaimLimits {
  /** The paused lanes, in the order they were paused (absent: none). */
  readonly pausedLanes?: readonly string[];
}

/** policy.lua's reply: whether it wrote anything, and the policy stored before. */
export interface PolicyReply {
  readonly changed: boolean;
  readonly previous: ClaimLimits;
}

/**
 * A stored rate text ("<max> <ms>", a fixed window, or "<max> <ms> sliding") and lane policy text
 * ("" or absent: none) as a policy.
 */
export function decodePolicy(rate: string | null | undefined, lanes: string | null | undefined): ClaimLimits {
  const m = rate ? /^(\d+) (\d+)( sliding)?$/.exec(rate) : null;
  return {
    ...(m ? { rateLimit: { max: Number(m[1]), intervalMs: Number(m[2]), ...(m[3] ? { window: 'sliding' as const } : {}) } } : {}),
    ...(lanes ? { lanePolicy: lanes } : {}),
  };
}

const windowOf = (p: ClaimLimits): 'fixed' | 'sliding' => p.rateLimit?.window ?? 'fixed';

/** True when two policies are the same rule (a fixed window given or left out is the same). */
export function samePolicy(a: ClaimLimits, b: ClaimLimits): boolean {
  return (
    (a.rateLimit?.max ?? 0) === (b.rateLimit?.max ?? 0) &&
    (a.rateLimit?.intervalMs ?? 0) === (b.rateLimit?.intervalMs ?? 0) &&
    windowOf(a) === windowOf(b) &&
    (a.lanePolicy ?? '') === (b.lanePolicy ?? '')
  );
}

/** A policy as one line of text (logs). */
export function describePolicy(p: ClaimLimits): string {
  const parts: string[] = [];
  if (p.rateLimit) parts.push(`rate ${p.rateLimit.max}/${p.rateLimit.intervalMs} ms${windowOf(p) === 'sliding' ? ' sliding' : ''}`);
  if (p.lanePolicy) parts.push(`lanes "${p.lanePolicy}"`);
  return parts.length > 0 ? parts.join(', ') : 'none';
}

/** The client surface `readPolicy` needs (iovalkey's Redis and Cluster fit). */
export interface HashReader {
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
}

/**
 * A queue's stored policy (meta `rate`, `gpol`: what every claim enforces), decoded, with the
 * lanes paused fleet-wide (meta `gpaused`) when any is.
 */
export async function readPolicy(c: HashReader, k: QueueKeys): Promise<StoredPolicy> {
  const [rate, lanes, paused] = await c.hmget(k.meta, 'rate', 'gpol', 'gpaused');
  const pausedLanes = (paused ?? '').split(' ').filter((g) => g !== '');
  return { ...decodePolicy(rate, lanes), ...(pausedLanes.length > 0 ? { pausedLanes } : {}) };
}

/**
 * policy.lua: stores `p` as the queue's policy (absent parts: none); answers the previous one. A
 * fixed window is sent in the call's original form (5 arguments), a sliding one as the optional
 * sixth: the stored text of a fixed limit is the one every v2 peer writes.
 */
export async function writePolicy(c: ScriptClient, k: QueueKeys, p: ClaimLimits): Promise<PolicyReply> {
  const args: (string | number)[] = [PROTOCOL_VERSION, 'set', p.rateLimit?.max ?? 0, p.rateLimit?.intervalMs ?? 0, p.lanePolicy ?? ''];
  if (p.rateLimit && windowOf(p) === 'sliding') args.push('sliding');
  const r = (await runScript(c, 'policy', [k.meta, k.wake], args)) as [number, string, string];
  return { changed: Number(r[0]) === 1, previous: decodePolicy(r[1], r[2]) };
}

/**
 * policy.lua's lane mode: pauses (`pause`) or resumes (`resume`) one lane of the queue
 * fleet-wide; true when its state changed. A resume pushes a wake marker (an idle consumer
 * claims the lane's work at once).
 */
export async function pauseLaneWire(c: ScriptClient, k: QueueKeys, lane: string, action: 'pause' | 'resume'): Promise<boolean> {
  return (await runScript(c, 'policy', [k.meta, k.wake], [PROTOCOL_VERSION, action, lane])) === 1;
}

/**
 * Stores `mine` as the queue's policy (a process declaring its options) and answers the policy it
 * replaced when that was a different, non-empty one — the case to warn about, naming both: one
 * rule, the stored one, never a silent mix. Undefined when nothing else was replaced.
 */
export async function declarePolicy(c: ScriptClient, k: QueueKeys, mine: ClaimLimits): Promise<ClaimLimits | undefined> {
  const { changed, previous } = await writePolicy(c, k, mine);
  return changed && (previous.rateLimit !== undefined || previous.lanePolicy !== undefined) ? previous : undefined;
}
