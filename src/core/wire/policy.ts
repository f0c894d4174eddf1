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
  /** At most `max` jobs per `intervalMs`, all consumers together. */
  readonly rateLimit?: { readonly max: number; readonly intervalMs: number };
  /** The lane policy text (`lanePolicyWire`; meta `gpol`, the wire's name). */
  readonly lanePolicy?: string;
}

/** policy.lua's reply: whether it wrote anything, and the policy stored before. */
export interface PolicyReply {
  readonly changed: boolean;
  readonly previous: ClaimLimits;
}

/** A stored rate text ("<max> <ms>") and lane policy text ("" or absent: none) as a policy. */
export function decodePolicy(rate: string | null | undefined, lanes: string | null | undefined): ClaimLimits {
  const m = rate ? /^(\d+) (\d+)$/.exec(rate) : null;
  return {
    ...(m ? { rateLimit: { max: Number(m[1]), intervalMs: Number(m[2]) } } : {}),
    ...(lanes ? { lanePolicy: lanes } : {}),
  };
}

/** True when two policies are the same rule. */
export function samePolicy(a: ClaimLimits, b: ClaimLimits): boolean {
  return (a.rateLimit?.max ?? 0) === (b.rateLimit?.max ?? 0) && (a.rateLimit?.intervalMs ?? 0) === (b.rateLimit?.intervalMs ?? 0) && (a.lanePolicy ?? '') === (b.lanePolicy ?? '');
}

/** A policy as one line of text (logs). */
export function describePolicy(p: ClaimLimits): string {
  const parts: string[] = [];
  if (p.rateLimit) parts.push(`rate ${p.rateLimit.max}/${p.rateLimit.intervalMs} ms`);
  if (p.lanePolicy) parts.push(`lanes "${p.lanePolicy}"`);
  return parts.length > 0 ? parts.join(', ') : 'none';
}

/** The client surface `readPolicy` needs (iovalkey's Redis and Cluster fit). */
export interface HashReader {
  hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
}

/** A queue's stored policy (meta `rate`, `gpol`: what every claim enforces), decoded. */
export async function readPolicy(c: HashReader, k: QueueKeys): Promise<ClaimLimits> {
  const [rate, lanes] = await c.hmget(k.meta, 'rate', 'gpol');
  return decodePolicy(rate, lanes);
}

/** policy.lua: stores `p` as the queue's policy (absent parts: none); answers the previous one. */
export async function writePolicy(c: ScriptClient, k: QueueKeys, p: ClaimLimits): Promise<PolicyReply> {
  const r = (await runScript(c, 'policy', [k.meta, k.wake], [PROTOCOL_VERSION, 'set', p.rateLimit?.max ?? 0, p.rateLimit?.intervalMs ?? 0, p.lanePolicy ?? ''])) as [number, string, string];
  return { changed: Number(r[0]) === 1, previous: decodePolicy(r[1], r[2]) };
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
