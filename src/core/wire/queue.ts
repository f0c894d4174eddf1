import { PROTOCOL_VERSION, call, runScript, type ScriptCall, type ScriptClient } from '../scripts.js';
import { globalKeys, type QueueKeys } from '../keys.js';
import { parseClaimReply, type ClaimReply } from './claim-reply.js';

export { CLAIM_WIDTH, parseClaimReply, type ClaimFlow, type ClaimReply, type WireClaim } from './claim-reply.js';

/** One job to enqueue, already encoded for the wire. */
export interface WireJob {
  readonly id: string;
  readonly payload: string;
  readonly delayMs: number;
  readonly runAtMs: number;
  readonly maxAttempts?: number;
  readonly backoff?: string;
  /** The dedup key (`QueueKeys.dedup`) of a keyed enqueue: every job of one call has one, or none does. */
  readonly dedupKey?: string;
  /** 0..9, higher claimed first (0 or absent: the plain `pending` list). */
  readonly priority?: number;
  /** A fair lane (sent as `g:<lane>`, the wire's name); excludes `priority`. */
  readonly lane?: string;
  /** The job's extras as `encodeExtras` spells them ("" or absent: none; docs/protocol.md §3). */
  readonly extras?: string;
  /** The job's business id (docs/queue.md): with it, the call sends the refs key and one per job. */
  readonly ref?: string;
}

/** True when `j` has nothing but an id and a payload (enqueue's compact form carries it). */
function isPlain(j: WireJob): boolean {
  return j.delayMs === 0 && j.runAtMs === 0 && j.maxAttempts === undefined && (j.backoff ?? '') === '' && !j.priority && !j.lane && !j.extras;
}

/** A fenced completion. */
export interface WireCompletion {
  readonly id: string;
  readonly token: string;
  readonly result: string;
}

/** One job a reap moved: its id, the attempt whose lease expired, and where it went. */
export interface ReapedJob {
  readonly id: string;
  readonly attempt: number;
  readonly outcome: 'requeued' | 'buried' | 'cancelled';
}

/** What `reap.lua` did: how many jobs took each way, and each of them. */
export interface ReapReply {
  readonly requeued: number;
  readonly buried: number;
  readonly cancelled: number;
  readonly jobs: readonly ReapedJob[];
}

/** Script calls that are also sent together in one pipeline (the consumer's round). */
export const calls = {
  /**
   * The queue's rate limit and lane policy are the stored ones (policy.lua): a claim carries none.
   * Its last argument (`default-fair` = `fair`, protocol v2 additive) asks for the default lane policy
   * (every lane weight 1) when none is stored: exact lane shares at any claim size. This client
   * always sends it; `defaultFair = false` sends the call as older peers do (the old rotation).
   * After it, `stamp` = `1` (additive too) records attempt starts: the row's `started` (attempt
   * history, docs/queue.md), one field in the claim's HSET.
   */
  claim(k: QueueKeys, n: number, leaseMs: number, promote = 1000, defaultFair = true): ScriptCall<ClaimReply> {
    const args: (string | number)[] = defaultFair ? [PROTOCOL_VERSION, n, leaseMs, promote, 'fair', '1'] : [PROTOCOL_VERSION, n, leaseMs, promote];
    return {
      name: 'claim',
      keys: [k.meta, k.pending, k.scheduled, k.active, k.wake, k.data, k.opts, k.jobPrefix, k.events],
      args,
      parse: parseClaimReply,
    };
  },

  complete(k: QueueKeys, keepDone: number, done: readonly WireCompletion[]): ScriptCall<number[]> {
    const { keys, args } = completeCall(k, keepDone, done);
    return { name: 'complete', keys, args, parse: (reply) => reply as number[] };
  },

  /**
   * `complete` for a caller that relays flow hand-offs itself (complete.lua's self-relay lease):
   * the hand-offs it writes come back in the reply, already leased to the caller for `leaseMs`.
   */
  completeRelaying(k: QueueKeys, keepDone: number, done: readonly WireCompletion[], leaseMs: number): ScriptCall<CompleteRelayingReply> {
    const { keys, args } = completeCall(k, keepDone, done);
    args.push(leaseMs);
    return {
      name: 'complete',
      keys,
      args,
      parse: (reply) => {
        const r = reply as (number | string)[];
        const handoffs: { id: string; text: string }[] = [];
        for (let i = done.length; i < r.length; i += 2) handoffs.push({ id: String(r[i]), text: String(r[i + 1]) });
        return { ok: r.slice(0, done.length) as number[], handoffs };
      },
    };
  },
};

/** The reply of `calls.completeRelaying`: per job 1 (completed) or 0 (refused), and the hand-offs written. */
export interface CompleteRelayingReply {
  readonly ok: number[];
  /** Outbox entries this call wrote (flow children's hand-offs), leased to the caller. */
  readonly handoffs: readonly { readonly id: string; readonly text: string }[];
}

/** complete.lua's keys and arguments for `done` (the outbox keys always ride along). */
function completeCall(k: QueueKeys, keepDone: number, done: readonly WireCompletion[]): { keys: string[]; args: (string | number)[] } {
  const keys = [k.meta, k.active, k.done, k.data, k.jobPrefix, k.events];
  const args: (string | number)[] = [PROTOCOL_VERSION, keepDone, done.length];
  for (const d of done) {
    keys.push(k.claimedRow(d.id));
    args.push(d.id, d.token, d.result);
  }
  keys.push(k.outbox, k.outdue); // a flow child's hand-off (docs/flows.md)
  return { keys, args };
}

/**
 * Typed wrappers, one per script in `lua/`. Every key array is built here from the key grammar;
 * services never assemble keys.
 */
export const wire = {
  /**
   * `eventsLog`: the lifecycle-log length to record for the queue ("" keeps what is there). Per
   * job: 1 added, 0 its id existed; with dedup keys (`dedupWindowMs` given, every job keyed) the
   * id of the job holding the key when it was held (`dedupMode` `d`: or debounced into). When a
   * job has a business id (`ref`), the refs key ends the keys and one business id per job ("" for
   * none) ends the arguments; a held business id answers its job's wire id.
   */
  async enqueue(c: ScriptClient, k: QueueKeys, maxBytes: number, jobs: readonly WireJob[], eventsLog: number | '' = '', dedupWindowMs?: number, dedupMode?: 'w' | 'd'): Promise<(number | string)[]> {
    const args: (string | number)[] = [PROTOCOL_VERSION, maxBytes, jobs.length, eventsLog];
    // A call of plain jobs (no delay, run-at, options, lane or extras) takes the compact form:
    // two arguments per job, a third of the bytes to write and parse.
    if (jobs.every(isPlain)) for (const j of jobs) args.push(j.id, j.payload);
    else {
      for (const j of jobs) args.push(j.id, j.payload, j.delayMs, j.runAtMs, j.maxAttempts ?? '', j.backoff ?? '');
      // Priorities and lanes ride after the jobs, one per job, only when a job has one; the
      // dedup window comes last (lua/enqueue.lua). Extras come after the lanes (so a call with
      // extras sends lanes too).
      const extras = jobs.some((j) => j.extras);
      if (extras || jobs.some((j) => j.priority || j.lane)) for (const j of jobs) args.push(j.lane ? `g:${j.lane}` : (j.priority ?? 0));
      if (extras) for (const j of jobs) args.push(j.extras ?? '');
    }
    const keys = [k.meta, k.pending, k.scheduled, k.wake, k.data, k.opts, k.events];
    if (dedupWindowMs !== undefined) {
      for (const j of jobs) keys.push(j.dedupKey ?? '');
      args.push(dedupWindowMs);
      // The mode word (w window, d debounce) after the window: keys freed by cancel and remove.
      if (dedupMode !== undefined) args.push(dedupMode);
    }
    if (jobs.some((j) => j.ref !== undefined)) {
      keys.push(k.refs);
      for (const j of jobs) args.push(j.ref ?? '');
    }
    return (await runScript(c, 'enqueue', keys, args)) as (number | string)[];
  },

  claim(c: ScriptClient, k: QueueKeys, n: number, leaseMs: number, promote = 1000, defaultFair = true): Promise<ClaimReply> {
    return call(c, calls.claim(k, n, leaseMs, promote, defaultFair));
  },



  complete(c: ScriptClient, k: QueueKeys, keepDone: number, done: readonly WireCompletion[]): Promise<number[]> {
    return call(c, calls.complete(k, keepDone, done));
  },

  async retry(
    c: ScriptClient,
    k: QueueKeys,
    job: { id: string; token: string; error: string; fatal: boolean; worker?: string; stack?: string },
    defaults: { maxAttempts: number; backoff: string; deadCap: number },
  ): Promise<{ outcome: 'stale' | 'retry' | 'dead' | 'cancelled'; at?: number }> {
    const args: (string | number)[] = [PROTOCOL_VERSION, job.id, job.token, job.error, job.fatal ? '1' : '0', defaults.maxAttempts, defaults.backoff, defaults.deadCap];
    // The attempt's worker and stack (optional trailing, protocol v2 additive): its history record.
    if (job.worker !== undefined || job.stack !== undefined) args.push(job.worker ?? '', job.stack ?? '');
    const r = (await runScript(
      c,
      'retry',
      [k.meta, k.active, k.scheduled, k.dead, k.wake, k.data, k.jobPrefix, k.job(job.id), k.events, k.cancelled, k.outbox, k.outdue],
      args,
    )) as number[];
    const outcome = r[0] === 1 ? 'retry' : r[0] === 2 ? 'dead' : r[0] === 3 ? 'cancelled' : 'stale';
    return { outcome, at: r[1] };
  },

  /** Per job: 1 extended, 2 extended but a cancel was requested, 0 lease lost. */
  async extend(c: ScriptClient, k: QueueKeys, leaseMs: number, held: readonly { id: string; token: string }[]): Promise<number[]> {
    const keys = [k.meta, k.active, k.jobPrefix];
    const args: (string | number)[] = [PROTOCOL_VERSION, leaseMs, held.length];
    for (const h of held) {
      keys.push(k.claimedRow(h.id));
      args.push(h.id, h.token);
    }
    return (await runScript(c, 'extend', keys, args)) as number[];
  },

  /**
   * A running job's checkpoint (`c`), progress (`p`) or log line (`l`), fenced by its token;
   * `limit` is the largest checkpoint in bytes (`c`) or the most log lines kept (`l`).
   * Resolves to false when the holder is stale (nothing written).
   */
  async progress(c: ScriptClient, k: QueueKeys, job: { id: string; token: string }, what: 'c' | 'p' | 'l', value: string, limit: number): Promise<boolean> {
    const r = await runScript(c, 'progress', [k.meta, k.jobPrefix, k.claimedRow(job.id)], [PROTOCOL_VERSION, job.id, job.token, what, value, limit]);
    return r === 1;
  },

  /** Per job: 1 handed back to pending, 2 cancelled (a cancel flagged it while active), 0 refused. */
  async release(c: ScriptClient, k: QueueKeys, held: readonly { id: string; token: string }[]): Promise<number[]> {
    const keys = [k.meta, k.active, k.pending, k.wake, k.jobPrefix, k.events, k.cancelled, k.data];
    const args: (string | number)[] = [PROTOCOL_VERSION, held.length];
    for (const h of held) {
      keys.push(k.claimedRow(h.id));
      args.push(h.id, h.token);
    }
    keys.push(k.outbox, k.outdue);
    return (await runScript(c, 'release', keys, args)) as number[];
  },

  /** Expired leases: requeued, buried (attempts spent), or cancelled (a cancel flagged them while active). */
  async reap(
    c: ScriptClient,
    k: QueueKeys,
    limit: number,
    maxAttempts: number,
    deadCap: number,
  ): Promise<ReapReply> {
    const r = (await runScript(
      c,
      'reap',
      [k.meta, k.active, k.pending, k.dead, k.wake, k.data, k.jobPrefix, k.events, k.cancelled, k.outbox, k.outdue],
      [PROTOCOL_VERSION, limit, maxAttempts, deadCap],
    )) as (number | string)[];
    const [requeued, buried, cancelled] = r as number[];
    const jobs: ReapedJob[] = [];
    for (let i = 3; i + 1 < r.length; i += 2) {
      const n = jobs.length;
      jobs.push({ id: String(r[i]), attempt: Number(r[i + 1]), outcome: n < requeued ? 'requeued' : n < requeued + buried ? 'buried' : 'cancelled' });
    }
    return { requeued, buried, cancelled, jobs };
  },

  async cancel(c: ScriptClient, k: QueueKeys, id: string, keepCancelled: number): Promise<number> {
    return (await runScript(
      c,
      'cancel',
      [k.meta, k.pending, k.scheduled, k.cancelled, k.data, k.opts, k.jobPrefix, k.job(id), k.events, k.outbox, k.outdue],
      [PROTOCOL_VERSION, id, keepCancelled],
    )) as number;
  },

  /**
   * Changes a waiting job's priority (0..9; priority.lua): 1 changed, 0 it had that priority, -1
   * no such job, -2 it does not wait (active, finished, cancelled, a waiting flow parent), -3 it
   * is in a fair lane. Nothing is written but by 1.
   */
  async priority(c: ScriptClient, k: QueueKeys, id: string, priority: number): Promise<1 | 0 | -1 | -2 | -3> {
    return (await runScript(c, 'priority', [k.meta, k.pending, k.scheduled, k.data, k.opts, k.jobPrefix, k.job(id)], [PROTOCOL_VERSION, id, priority])) as 1 | 0 | -1 | -2 | -3;
  },

  /** Records the queue's lifecycle-log length (meta `elog`; elog.lua): true when it changed. */
  async eventsLog(c: ScriptClient, k: QueueKeys, length: number): Promise<boolean> {
    return ((await runScript(c, 'elog', [k.meta, k.events], [PROTOCOL_VERSION, length])) as number) === 1;
  },

  /** Reads one job atomically: flat field/value pairs, empty when there is no such job. */
  async peek(c: ScriptClient, k: QueueKeys, id: string): Promise<Record<string, string>> {
    const r = (await runScript(
      c,
      'peek',
      [k.meta, k.scheduled, k.data, k.opts, k.jobPrefix, k.job(id)],
      [PROTOCOL_VERSION, id],
    )) as string[];
    const row: Record<string, string> = {};
    for (let i = 0; i < r.length; i += 2) row[r[i]] = r[i + 1];
    return row;
  },

  /**
   * Claims any free node number (`renew` omitted), renews `renew`, or releases it (`leaseMs` 0).
   * Resolves to the number, or -1 (held by another owner, not ours to release, or all taken).
   * With `info` (the describing form, docs/protocol.md §1), the call also writes the process's
   * description in `{emq}:procs` (`""`: deletes it; a release always deletes it).
   */
  async node(c: ScriptClient, owner: string, leaseMs: number, renew?: number, info?: string): Promise<number> {
    const args = [PROTOCOL_VERSION, owner, leaseMs, renew === undefined ? '' : renew];
    if (info === undefined) return (await runScript(c, 'node', [globalKeys.nodeSeq, globalKeys.nodes], args)) as number;
    return (await runScript(c, 'node', [globalKeys.nodeSeq, globalKeys.nodes, globalKeys.procs], [...args, info])) as number;
  },
};
