import { EchoMqError } from '../errors.js';
import { fromReplyError } from '../reply-errors.js';
import { PROTOCOL_VERSION, call, callPipeline, type ScriptCall, type ScriptClient } from '../scripts.js';

/** How one part of a consumer round ended: settled on its own, as in a pipeline. */
export interface RoundParts<C, K> {
  readonly complete?: PromiseSettledResult<C>;
  readonly claim?: PromiseSettledResult<K>;
}

/** A part's reply: `{ "E", text }` (round.lua's encoding of an error reply) is that error, typed. */
function settle<T>(c: ScriptCall<T>, part: unknown): PromiseSettledResult<T> {
  if (Array.isArray(part) && part[0] === 'E') return { status: 'rejected', reason: fromReplyError(new Error(String(part[1]))) };
  try {
    return { status: 'fulfilled', value: c.parse(part) };
  } catch (err) {
    return { status: 'rejected', reason: fromReplyError(err) };
  }
}

/**
 * round.lua's call: a complete.lua call and a claim.lua call of one queue as one atomic script
 * call (ARGV: each part's ARGV, then the version and the complete part's key and argument counts).
 */
export function roundCall<C, K>(complete: ScriptCall<C>, claim: ScriptCall<K>): ScriptCall<Required<RoundParts<C, K>>> {
  if (complete.name !== 'complete' || claim.name !== 'claim') {
    throw new EchoMqError('EMQ_INTERNAL', `a round is complete + claim, not ${complete.name} + ${claim.name}`);
  }
  return {
    name: 'round',
    keys: [...complete.keys, ...claim.keys],
    args: [...complete.args, ...claim.args, PROTOCOL_VERSION, complete.keys.length, complete.args.length],
    parse: (reply) => {
      const r = reply as readonly unknown[];
      if (!Array.isArray(r) || r.length !== 2) throw new EchoMqError('EMQ_INTERNAL', 'round.lua answered a reply of another shape');
      return { complete: settle(complete, r[0]), claim: settle(claim, r[1]) };
    },
  };
}

/**
 * Runs a consumer round's parts: both in one round.lua call (one EVALSHA: Valkey's fixed cost
 * per script call is paid once), or the one part alone. Each part settles on its own; a failure
 * of the call itself (connection, NOSCRIPT fallback failing) rejects, and neither part ran.
 */
export async function runRound<C, K>(client: ScriptClient, complete?: ScriptCall<C>, claim?: ScriptCall<K>): Promise<RoundParts<C, K>> {
  if (complete && claim) return call(client, roundCall(complete, claim));
  if (complete) return { complete: (await callPipeline(client, [complete]))[0] };
  if (claim) return { claim: (await callPipeline(client, [claim]))[0] };
  return {};
}
