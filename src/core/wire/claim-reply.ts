import { EchoMqError } from '../errors.js';

/** One claimed job as the claim script returns it. */
export interface WireClaim {
  readonly id: string;
  readonly token: string;
  readonly attempt: number;
  readonly payload: string;
  /** The job's extras text: "" for a job enqueued without any, else a JSON object (`decodeExtras`). */
  readonly extras: string;
  /**
   * claim's flow flag: '' a plain job (or a first claim), 'c' a flow child (its row names a
   * parent: settling it owes the parent a hand-off, so the outbox keys go with the settle), 'p' a
   * flow parent released by its children (their `r:<child>` results are in its row), 'pc' both.
   */
  readonly flow: ClaimFlow;
}

/** claim.lua's per-job flow flag (docs/protocol.md §9). */
export type ClaimFlow = '' | 'c' | 'p' | 'pc';

/** The fields per job this runtime reads from claim's reply (a reply declares its own width, >= this). */
export const CLAIM_WIDTH = 6;

/**
 * claim.lua's reply `{ wait, width, <width fields per job>... }`: per job id, token, attempt,
 * payload, extras, flow, then the fields a later version may append (skipped: a reply declares its
 * width). A width below 6, or a length that is not a whole number of jobs, is EMQ_INTERNAL.
 */
export function parseClaimReply(reply: unknown): ClaimReply {
  const r = reply as (string | number)[];
  const width = Array.isArray(r) ? r[1] : undefined;
  if (typeof width !== 'number' || !Number.isInteger(width) || width < CLAIM_WIDTH || (r.length - 2) % width !== 0) {
    throw new EchoMqError('EMQ_INTERNAL', `claim.lua answered a reply of another shape (width ${String(width)}, ${Array.isArray(r) ? r.length : 'no'} fields)`);
  }
  const jobs: WireClaim[] = [];
  for (let i = 2; i < r.length; i += width) {
    const f = r[i + 5];
    const flow: ClaimFlow = f === 'c' || f === 'p' || f === 'pc' ? f : '';
    jobs.push({ id: r[i] as string, token: String(r[i + 1]), attempt: Number(r[i + 2]), payload: r[i + 3] as string, extras: r[i + 4] as string, flow });
  }
  return { jobs, waitMs: Number(r[0]) };
}

/** The claim script's reply: the jobs, and how long until more work is due. */
export interface ClaimReply {
  readonly jobs: WireClaim[];
  /** -1: jobs remain pending; -2: nothing scheduled; else ms until the next scheduled job is due. */
  readonly waitMs: number;
}
