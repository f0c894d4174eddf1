import { encodePayload, decodePayload, type Json, type PayloadCodec } from '../core/codec.js';
import type { EchoMqConnection } from '../core/connection/index.js';
import { BatchTooLargeError, IdCollisionError, InvalidOptionError, JobStateError, NotFoundError } from '../core/errors.js';
import { CoalescerPool } from '../core/coalescer.js';
import { assertBrandedId, parseId } from '../core/ids.js';
import { hasJobIdForm, queueKeys } from '../core/keys.js';
import { assertJobIdOrRef, resolveJobId } from './business-ids.js';
import { wire, type WireJob } from '../core/wire/index.js';
import { pauseLaneWire, readPolicy, writePolicy, type ClaimLimits, type StoredPolicy } from '../core/wire/index.js';
import { decodeExtras, encodeExtras } from '../core/extras.js';
import { map, type Observable } from 'rxjs';
import { SignalHub } from '../core/signal-hub.js';
import { FlowService, type FlowOptions } from './flows/index.js';
import type { FlowNode, FlowSpec } from './flows/index.js';
import { ScheduleService } from './schedules/index.js';
import { Scheduler } from './schedules/index.js';
import type { UpsertOutcome } from '../core/wire/index.js';
import type { ScheduleInfo, ScheduleOptions, ScheduleSpec } from './schedules/index.js';
import { readCounts } from './queue-counts.js';
import { rowAttempts } from './attempt-history.js';
import { decodeStored, rowWrites } from './stored-text.js';
import { announce } from '../core/announce.js';
import type { JobCounts, JobStatus, JobView, QueueEvent, QueueEventKind, UndecodedText } from './job.js';
import {
  BUILTIN_DEFAULTS,
  MAX_BATCH,
  checkEnqueueItem,
  checkEnqueueOptions,
  checkPriority,
  checkLane,
  resolveDefaults,
  scheduleWire,
  type EnqueueItem,
  type EnqueueOptions,
  type QueueDefaults,
} from './queue-options.js';
import { backoffWire, checkAttempts } from './base-options.js';
import { checkPolicyOptions, lanePolicyWire, type PolicyOptions } from './lane-policy.js';
import { dedupWire } from './dedup-options.js';
import { toWireJob } from './enqueue-wire.js';

/** The priority levels whose lists `counts` reads (docs/protocol.md §5, Priorities). */

/** How often a freshly minted id found taken is re-minted before enqueue fails with EMQ_ID_COLLISION. */
const MINT_RETRIES = 5;

/**
 * The producer and operator surface of the Queue: enqueue, inspect, count, cancel. Every write
 * is one script call (one round trip), whatever the batch size; concurrent enqueues to one queue
 * share a call (see `Coalescer`), each still atomic on its own.
 */
export class QueueService {
  private readonly perQueue = new Map<string, QueueDefaults>();
  /** The enqueue calls per queue: concurrent requests merged, up to one batch per call. */
  private readonly batches = new CoalescerPool<WireJob, number | string>((queue) => {
    const keys = queueKeys(queue);
    const { maxPayloadBytes } = this.settings(queue);
    const c = this.conn.scriptClient;
    return (jobs) => wire.enqueue(c, keys, maxPayloadBytes, jobs, this.eventsLogArg(queue));
  }, MAX_BATCH);
  /**
   * The same for keyed enqueues (business-key dedup): their calls carry a dedup key per job, the
   * window and the mode; one coalescer per `<queue>|<mode>|<ttl ms>` (a name has no `|`).
   */
  private readonly keyedBatches = new CoalescerPool<WireJob, number | string>((slot) => {
    const [queue, mode, ttl] = slot.split('|');
    const keys = queueKeys(queue);
    const { maxPayloadBytes } = this.settings(queue);
    const c = this.conn.scriptClient;
    return (jobs) => wire.enqueue(c, keys, maxPayloadBytes, jobs, this.eventsLogArg(queue), Number(ttl), mode === 'd' ? 'd' : 'w');
  }, MAX_BATCH);
  private hub?: SignalHub;
  private flowService?: FlowService;
  private scheduleService?: ScheduleService;
  private schedulerLoop?: Scheduler;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly defaults: QueueDefaults = BUILTIN_DEFAULTS,
    private readonly overrides: Readonly<Record<string, Partial<QueueDefaults>>> = {},
    private readonly flowOptions: FlowOptions = {},
  ) {}

  /** The flow surface and this process's flow relay (docs/flows.md). */
  get flows(): FlowService {
    return (this.flowService ??= new FlowService(this.conn, (q) => this.settings(q), this.flowOptions));
  }

  /** This process's schedule loop (the module starts it at bootstrap and stops it before shutdown). */
  get scheduler(): Scheduler {
    return (this.schedulerLoop ??= new Scheduler(this.conn));
  }

  private get scheduleStore(): ScheduleService {
    return (this.scheduleService ??= new ScheduleService(this.conn, (q) => this.settings(q)));
  }

  /**
   * Stores `p` as the queue's policy (policy.lua): the rate limit and lane policy that every
   * claim of every consumer and runtime enforces (absent parts: none). Validated as the queue
   * options are (InvalidOptionError). Answers the policy stored before.
   */
  async setPolicy(queue: string, p: PolicyOptions): Promise<ClaimLimits> {
    checkPolicyOptions(p, 'setPolicy options');
    const r = await writePolicy(this.conn.scriptClient, queueKeys(queue), { rateLimit: p.rateLimit, lanePolicy: p.lanes === undefined ? undefined : lanePolicyWire(p.lanes) });
    return r.previous;
  }

  /**
   * The queue's stored policy (meta `rate`, `gpol`), decoded: the lane policy as its wire text,
   * and `pausedLanes` when a lane is paused (`pauseLane`).
   */
  policy(queue: string): Promise<StoredPolicy> {
    return readPolicy(this.conn.client, queueKeys(queue));
  }

  /**
   * Pauses one lane of the queue fleet-wide (stored in Valkey: every claim of every consumer and
   * runtime passes it over): its jobs stay pending, its running jobs finish, the other lanes go
   * on at their weights. True when it was not paused yet. At most 1000 lanes are paused at once.
   */
  pauseLane(queue: string, lane: string): Promise<boolean> {
    const k = queueKeys(queue);
    return pauseLaneWire(this.conn.scriptClient, k, checkLane(lane), 'pause');
  }

  /** Resumes a paused lane (an idle consumer is woken to claim its work). True when it was paused. */
  resumeLane(queue: string, lane: string): Promise<boolean> {
    const k = queueKeys(queue);
    return pauseLaneWire(this.conn.scriptClient, k, checkLane(lane), 'resume');
  }

  /**
   * Upserts the recurring schedule `name` of `queue` (cron with a time zone, or a fixed
   * interval; docs/queue.md, "Schedules") and has this process's loop tick the queue. Exactly one
   * job per tick fleet-wide. Resolves to `created`, `replaced` (tick restarted) or `unchanged`.
   */
  async schedule<T = Json>(queue: string, name: string, spec: ScheduleSpec, payload: T, opts?: ScheduleOptions): Promise<UpsertOutcome> {
    const r = await this.scheduleStore.schedule(queue, name, spec, payload, opts);
    this.scheduler.watch(queue);
    return r;
  }

  /** Removes schedule `name` of `queue`; resolves to true when it existed. Jobs already written stay. */
  unschedule(queue: string, name: string): Promise<boolean> {
    return this.scheduleStore.unschedule(queue, name);
  }

  /**
   * Enqueues one job of schedule `name` now (its payload and options), outside its tick grid:
   * the next tick, the count toward its `limit` and its window are untouched, so the next tick
   * still fires once, on time. Resolves to the job's id; `NotFoundError` when there is no such
   * schedule.
   */
  runScheduleNow(queue: string, name: string): Promise<string> {
    return this.scheduleStore.runNow(queue, name);
  }

  /** The schedules of `queue`, by name, with their next ticks. */
  schedules<T = Json>(queue: string): Promise<ScheduleInfo<T>[]> {
    return this.scheduleStore.list<T>(queue);
  }

  /** Creates a flow (a parent waiting for its children, in any queues); resolves to every node's id. */
  flow<T = Json>(spec: FlowSpec<T>): Promise<FlowNode> {
    return this.flows.flow(spec);
  }

  /** Creates many flows, one script call per queue of their roots. */
  flowMany<T = Json>(specs: readonly FlowSpec<T>[]): Promise<FlowNode[]> {
    return this.flows.flowMany(specs);
  }

  /** The effective defaults of `queue` (module defaults, then the queue's own). */
  settings(queue: string): QueueDefaults {
    let d = this.perQueue.get(queue);
    if (!d) {
      d = resolveDefaults(this.defaults, this.overrides[queue]);
      this.perQueue.set(queue, d);
    }
    return d;
  }

  /**
   * The lifecycle-log length an enqueue records for `queue` (meta `elog`): this process's
   * `eventsLog` when it is above 0 or set to 0 for this very queue (`queues.<name>`), else ""
   * (keep): a process that configures no log never turns off the log another process set.
   */
  private eventsLogArg(queue: string): number | '' {
    const n = this.settings(queue).eventsLog;
    return n > 0 || this.overrides[queue]?.eventsLog !== undefined ? n : '';
  }

  /**
   * Mints a job id now, to pass later as `opts.id` for an idempotent enqueue. Throws
   * `NodeLeaseError` (EMQ_NODE_LEASE) while the node lease is uncertain (just after a reconnect).
   */
  mintId(): string {
    return this.conn.ids.next('job');
  }

  /** Adds one job; resolves to its branded id. */
  async enqueue<T = Json>(queue: string, payload: T, opts?: EnqueueOptions): Promise<string> {
    checkEnqueueOptions(opts);
    const [id] = await this.enqueueMany(queue, [{ payload, opts }]);
    return id;
  }

  /**
   * Adds any number of jobs; resolves to their ids, in order (for a keyed job whose key was
   * taken, the id of the job holding it). Up to 1000 jobs go in one script call, atomically;
   * more are sent in consecutive calls of at most 1000 (each atomic, in order; a failure leaves
   * the chunks before it added). Every item is validated before the first call.
   */
  async enqueueMany<T = Json>(queue: string, items: readonly EnqueueItem<T>[]): Promise<string[]> {
    const k = queueKeys(queue); // the name is checked before anything is minted
    if (!Array.isArray(items) || items.length === 0) throw new InvalidOptionError('enqueueMany needs at least one item');
    items.forEach((it, i) => checkEnqueueItem(it, i)); // unknown keys: refused before anything is minted
    const { maxPayloadBytes, dedupWindowMs, codec } = this.settings(queue);
    const dedups = items.map((it) => dedupWire(it.opts ?? {}, dedupWindowMs));
    const d0 = dedups[0];
    if (dedups.some((d) => (d !== undefined) !== (d0 !== undefined))) {
      throw new InvalidOptionError('enqueueMany: give every item a dedup key, or none');
    }
    if (d0 && dedups.some((d) => d!.mode !== d0.mode || d!.ttlMs !== d0.ttlMs)) {
      throw new InvalidOptionError('enqueueMany: the keyed items share one dedup mode and ttlMs');
    }
    const keyed = d0 ? `${queue}|${d0.mode}|${d0.ttlMs}` : undefined;
    const dedupKeys = dedups.map((d) => (d ? k.dedup(d.key) : undefined)); // checked before anything is minted
    await this.conn.ids.ready(); // never mint on a node number this process does not certainly hold
    const mint = (): string => this.conn.ids.next('job');
    const jobs = items.map((it, i) => toWireJob(it, mint, maxPayloadBytes, dedupKeys[i], codec, items.length === 1 ? 'payload' : `[${i}].payload`));
    const ids: string[] = [];
    for (let at = 0; at < jobs.length; at += MAX_BATCH) {
      ids.push(...(await this.enqueueChunk(queue, items.slice(at, at + MAX_BATCH), jobs.slice(at, at + MAX_BATCH), keyed)));
      // After a write that went through: a refused one (EMQ_NOPERM, …) leaves the registry alone (once per connection).
      announce(this.conn, 'queues', queue);
    }
    return ids;
  }

  /** One call's worth (at most `MAX_BATCH`), through the queue's coalescer; re-mints colliding ids. */
  private async enqueueChunk<T>(queue: string, items: readonly EnqueueItem<T>[], jobs: WireJob[], keyed?: string): Promise<string[]> {
    if (jobs.length > MAX_BATCH) throw new BatchTooLargeError(jobs.length, MAX_BATCH);
    const batches = keyed ? this.keyedBatches : this.batches;
    // A business id's job gets a minted wire id too: a collision re-mints it.
    const minted = items.map((it) => it.opts?.id === undefined || !hasJobIdForm(it.opts.id));
    const holders: (string | undefined)[] = [];
    let send = jobs.map((_, i) => i);
    for (let round = 0; ; round++) {
      const added = await batches.submit(keyed ?? queue, send.map((i) => jobs[i]));
      // A key held by another job: the reply is that job's id (docs/queue.md, dedup).
      send.forEach((i, pos) => {
        if (typeof added[pos] === 'string') holders[i] = added[pos];
      });
      // A caller-given id already present is an idempotent repeat. A freshly minted one is a
      // collision (another process minted the same id): that job was not added, so it gets a
      // new id and is sent again rather than reported under the other job's id.
      send = send.filter((i, pos) => added[pos] === 0 && minted[i]);
      if (send.length === 0) return jobs.map((j, i) => holders[i] ?? j.id);
      if (round === MINT_RETRIES) {
        const shown = send.slice(0, 10).map((i) => `item ${i} (last id ${jobs[i].id})`).join(', ');
        throw new IdCollisionError(`${send.length} job(s) not added: each freshly minted id was taken, ${round + 1} times in a row: ${shown}; is another process minting on node ${this.conn.ids.node}?`);
      }
      for (const i of send) jobs[i] = { ...jobs[i], id: this.conn.ids.next('job') };
    }
  }

  /**
   * The wire id of a job given by its wire id or its business id (`EnqueueOptions.id`); undefined
   * when no job holds the business id. `InvalidIdError` for a string that is neither.
   */
  jobId(queue: string, idOrRef: string): Promise<string | undefined> {
    return resolveJobId(this.conn.client, queueKeys(queue), idOrRef);
  }

  /**
   * Reads one job by its wire id or its business id, or null when no row exists (never enqueued,
   * or past its retention).
   */
  async getJob<T = Json, R = Json>(queue: string, idOrRef: string): Promise<JobView<T, R> | null> {
    const k = queueKeys(queue);
    const id = await resolveJobId(this.conn.client, k, idOrRef);
    if (id === undefined) return null;
    // The business id of a job asked for by its wire id: one HGET, sent with the read.
    const [row, ref] = await Promise.all([wire.peek(this.conn.scriptClient, k, id), id === idOrRef ? this.conn.client.hget(k.refs, id) : idOrRef]);
    if (!row.status) return null;
    const payload = decodeStored<T>(row.payload);
    const result = decodeStored<R>(row.result);
    return {
      id,
      queue,
      status: row.status as JobStatus,
      name: row.x ? decodeExtras(row.x).n : undefined,
      ...(ref ? { ref } : {}),
      attempts: Number(row.attempts ?? 0),
      maxAttempts: row.max ? Number(row.max) : undefined,
      payload: payload.value as T,
      payloadError: payload.error,
      result: result.value,
      resultError: result.error,
      error: row.error || undefined,
      createdAt: new Date(parseId(id).ms),
      finishedAt: row.finished ? new Date(Number(row.finished)) : undefined,
      cancelRequested: row.cancel === '1',
      ...rowWrites(row),
      ...rowAttempts(row),
      ...(row.parent || row.deps ? await this.flows.view(row) : {}),
    };
  }

  /**
   * The queue's lifecycle events as they happen (sharded pub/sub; at most once: events sent while
   * nobody listens are gone — set `eventsLog` to also keep them in the queue's bounded stream).
   * One message per script call and kind, carrying every job id it moved.
   */
  events(queue: string): Observable<QueueEvent> {
    const channel = queueKeys(queue).events;
    this.hub ??= new SignalHub(this.conn, 64 * 1024 * 1024);
    return this.hub.observe<{ e: QueueEventKind; ids: string[]; at: number }>(channel).pipe(
      map((m) => ({ queue, kind: m.e, ids: m.ids, at: new Date(m.at) })),
    );
  }

  /** Jobs per status, read in one round trip (plus one for the fair lanes, when a queue has them). */
  counts(queue: string): Promise<JobCounts> {
    return readCounts(this.conn.client, queue);
  }

  /**
   * Changes the priority (0..9, higher first) of a job that waits, pending or scheduled, in one
   * atomic step (priority.lua): a pending job joins the back of its new level's line, a scheduled
   * one keeps its run-at. Resolves to `changed`, or `unchanged` when it had that priority. Throws
   * `InvalidOptionError` for a bad priority or id, `NotFoundError` for no such job, and
   * `JobStateError` for a job that does not wait (active, finished, cancelled, a waiting flow
   * parent) or waits in a lane (priority and lane are exclusive); nothing is written then.
   */
  async changePriority(queue: string, idOrRef: string, priority: number): Promise<'changed' | 'unchanged'> {
    const k = queueKeys(queue);
    const p = checkPriority(priority);
    const id = await resolveJobId(this.conn.client, k, idOrRef);
    if (id === undefined) throw new NotFoundError(`job ${idOrRef} of queue ${queue} does not exist`);
    const r = await wire.priority(this.conn.scriptClient, k, id, p);
    if (r === -1) throw new NotFoundError(`job ${id} of queue ${queue} does not exist`);
    if (r === -2) throw new JobStateError(`job ${id} of queue ${queue} does not wait (active, finished or cancelled): its priority cannot change`);
    if (r === -3) throw new JobStateError(`job ${id} of queue ${queue} waits in a lane: a job has a priority or a lane, not both`);
    return r === 1 ? 'changed' : 'unchanged';
  }

  /**
   * Writes the queue's configured lifecycle-log length (`eventsLog` of its settings) to Valkey
   * now, without an enqueue (elog.lua), so that a queue fed only by schedules or flows logs its
   * transitions too; the module does it at bootstrap for every queue it knows. A length of 0
   * (the default) writes nothing: the stored length stays whatever another process set.
   * Resolves to true when the stored length changed.
   */
  async applyEventsLog(queue: string): Promise<boolean> {
    const k = queueKeys(queue);
    const { eventsLog } = this.settings(queue);
    if (!(eventsLog > 0)) return false;
    return wire.eventsLog(this.conn.scriptClient, k, eventsLog);
  }

  /**
   * Cancels a job that has not started (pending or scheduled → cancelled). An active job is
   * flagged for cooperative cancel instead. Resolves to what happened. `id`: the job's wire id or
   * its business id.
   */
  async cancel(queue: string, idOrRef: string): Promise<'cancelled' | 'flagged' | 'finished' | 'missing'> {
    const k = queueKeys(queue);
    const id = await resolveJobId(this.conn.client, k, idOrRef);
    if (id === undefined) return 'missing';
    const r = await wire.cancel(this.conn.scriptClient, k, id, this.settings(queue).keepCancelled);
    return r === 1 ? 'cancelled' : r === 2 ? 'flagged' : r === 0 ? 'finished' : 'missing';
  }
}
