import { Subject, type Observable } from 'rxjs';
import { decodePayload } from '../../core/codec.js';
import type { EchoMqConnection } from '../../core/connection/index.js';
import { assertName, topicKeys, type TopicKeys } from '../../core/keys.js';
import type { ConsumerLogger } from '../../core/logger.js';
import { eventIdOf } from '../../core/event-id.js';
import { AckBuffer } from './acks.js';
import { reportProcessLoss, type GroupLoss, type GroupLossKind } from './losses.js';
import { consumerName, intIn, resolveGroupOptions, startId, type GroupConsumerConfig, type ResolvedGroupOptions } from './options.js';
import { GroupReader } from './reader.js';
import { GroupEvent } from './group-event.js';
import { GroupReclaimer } from './reclaim.js';
import { estimateLoss, type GroupSnapshot } from './upkeep.js';
import { announce } from '../../core/announce.js';
import { cmd, compareStreamIds, createGroup, errorText, isNoGroup, type GroupEntry } from './group-wire.js';
import { escapeControls } from '../../core/control-chars.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const silent: ConsumerLogger = { warn: () => undefined, error: () => undefined };

/**
 * A supervised consumer-group loop on one topic's log, usable without Nest. It creates its group
 * (idempotently), re-reads its own pending entries first, then reads new ones with a finite
 * BLOCK on a dedicated connection, runs up to `concurrency` handlers and acknowledges (batched)
 * only after success. An entry re-delivered after a failure or a crash (its own pending entries
 * at start, entries reclaimed past the ack timeout) runs alone, one at a time, so a poison event
 * that crashes its process spends only its own deliveries. A timer keeps running entries fresh
 * (`XCLAIM … JUSTID`), dead-letters entries over the delivery limit and removes gone members.
 * `NOGROUP` (log or group deleted) recreates the group and reports the loss on `losses$`.
 */
export class GroupConsumer {
  /** This member's consumer name in the group. */
  readonly consumer: string;
  readonly #losses = new Subject<GroupLoss>();
  /** Lost, recreated and dead-lettered reports of this loop (also sent to the process-wide stream, `BusService.losses$`). */
  readonly losses$: Observable<GroupLoss> = this.#losses.asObservable();
  private readonly k: TopicKeys;
  private readonly o: ResolvedGroupOptions;
  /** Stream ids of the entries whose handlers are running → their events (`stop` aborts their signals). */
  private readonly running = new Map<string, GroupEvent>();
  /** Read-ahead entries (option `prefetch`), read and pending here, not started yet, in log order from `aheadAt`. */
  private aheadQ: GroupEntry[] = [];
  private aheadAt = 0;
  /** Last error text seen per stream id (bounded), recorded with a dead letter. */
  private readonly lastError = new Map<string, string>();
  private readonly log: ConsumerLogger;
  /** Acknowledgements not yet sent. */
  private readonly acks: AckBuffer;
  /** The timer side: heartbeat, dead letters, gone members, the group snapshot. */
  private readonly reclaimer: GroupReclaimer;
  private stopping = false;
  private phase: 'own' | 'new' = 'own';
  private isolate = false;
  private cursor = '0';
  private lastSeen?: string;
  private readonly reader: GroupReader;
  private timer?: NodeJS.Timeout;
  private loopDone?: Promise<void>;
  private wake?: () => void;
  /** True while the loop waits for a free slot and will read right after (acks ride on that read). */
  private slotParked = false;
  private recovering?: Promise<void>;
  /** Removes this member from the process description (`connection.process`). */
  private undescribe?: () => void;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly cfg: GroupConsumerConfig,
  ) {
    this.k = topicKeys(cfg.topic);
    this.o = resolveGroupOptions(cfg.options);
    this.consumer = cfg.consumer ?? consumerName(cfg.instance);
    assertName(this.consumer, 'consumer');
    const deadCap = intIn(cfg.deadCap ?? 10_000, 1, 1_000_000, 'deadCap');
    const forgetIdleMs = intIn(cfg.forgetIdleMs ?? Math.max(this.o.ackTimeoutMs, 60_000), 100, 86_400_000, 'forgetIdleMs');
    this.log = cfg.logger ?? silent;
    this.acks = new AckBuffer(conn.client, (c, ids) => cmd(c, 'XACK', [this.k.log, this.o.group, ...ids]), (err) =>
      this.log.warn(`group ${this.name}: ack failed (${errorText(err)}); retried on the next tick`),
    );
    this.reclaimer = new GroupReclaimer({
      conn,
      k: this.k,
      o: this.o,
      consumer: this.consumer,
      name: this.name,
      log: this.log,
      deadCap,
      forgetIdleMs,
      running: this.running,
      ahead: {
        has: (id) => this.aheadQ.some((e, i) => i >= this.aheadAt && e.streamId === id),
        ids: () => this.aheadQ.slice(this.aheadAt).map((e) => e.streamId),
        count: () => this.aheadQ.length - this.aheadAt,
      },
      lastError: this.lastError,
      acks: this.acks,
      isStopping: () => this.stopping,
      dispatch: (e, deliveries) => this.dispatch(e, deliveries),
      report: (kind, ids, detail, extra) => this.report(kind, ids, detail, extra),
      requestIsolation: () => {
        this.isolate = true;
      },
      recoverGroup: () => this.recoverGroup(),
    });
    this.reader = new GroupReader(conn, this.k, this.o.group, this.consumer, this.acks, cfg.hangMs ?? 10_000);
  }

  /** The topic. */
  get topic(): string {
    return this.cfg.topic;
  }

  /** The group's name. */
  get group(): string {
    return this.o.group;
  }

  /** Handlers this member runs at once. */
  get concurrency(): number {
    return this.o.concurrency;
  }

  /** Free handler slots. */
  get free(): number {
    return this.o.concurrency - this.running.size;
  }

  /** True once `stop` was called. */
  get isStopping(): boolean {
    return this.stopping;
  }

  /** `topic/group/consumer`, for logs. */
  get name(): string {
    return `${this.topic}/${this.o.group}/${this.consumer}`;
  }

  /** The last look at the group (pending entries, lag), taken by the timer; undefined before the first or right after a recreation. */
  get snapshot(): GroupSnapshot | undefined {
    return this.reclaimer.snapshot;
  }

  /** Creates the group if needed and starts reading. */
  async start(): Promise<void> {
    announce(this.conn, 'topics', this.k.topic); // the registry of known topics
    this.undescribe = this.conn.process.add(() => ({ kind: 'group', topic: this.k.topic, group: this.o.group, consumer: this.consumer, concurrency: this.o.concurrency }));
    await createGroup(this.conn.client, this.k, this.o.group, startId(this.o.from));
    await this.reader.open();
    const every = Math.max(50, Math.min(Math.floor(this.o.ackTimeoutMs / 3), 5000));
    this.timer = setInterval(() => void this.reclaimer.tick(), every);
    void this.reclaimer.tick();
    this.loopDone = this.loop();
  }

  /**
   * Stops reading, waits up to `deadlineMs` for running handlers, then aborts the rest (their
   * entries stay pending and are reclaimed later), flushes acknowledgements, closes the blocking
   * connection.
   */
  async stop(deadlineMs: number): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.undescribe?.();
    if (this.timer) clearInterval(this.timer);
    this.wake?.();
    // A read that was answered while it is unblocked hands its entries to the loop, which runs
    // them (within the deadline below) before it sees the stop.
    await this.reader.stop();
    await this.loopDone;
    await this.release();
    const until = Date.now() + deadlineMs;
    while (this.running.size > 0 && Date.now() < until) await sleep(10);
    for (const ev of this.running.values()) GroupEvent.abort(ev, new Error('EchoMQ group consumer shut down'));
    const settle = Date.now() + 500;
    while (this.running.size > 0 && Date.now() < settle) await sleep(5);
    await this.acks.settled();
    await this.acks.flush();
    await this.reclaimer.idle();
  }

  /**
   * The loop: one step at a time, every failure followed by a back-off sleep and another step, so
   * it always resumes (no gate that a timer firing early could close for good). Steps: re-deliver
   * one entry alone (own pending entries at start, or an isolation pass) once nothing else runs
   * here; or wait for a free slot; or read new entries for the free slots.
   */
  private async loop(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      try {
        if (this.aheadAt < this.aheadQ.length) {
          // Read-ahead entries first, in order: a finishing handler starts the next one; the
          // next read (carrying the batch's acks) waits until they are all started.
          this.pump();
          if (this.aheadAt < this.aheadQ.length) await this.park(true);
          continue;
        }
        if (this.phase === 'own' || this.isolate) {
          if (this.running.size > 0) {
            await this.park(false);
            continue;
          }
          if (this.phase === 'own') await this.readOwn();
          else this.isolate = await this.reclaimer.claimOne();
        } else if (this.free <= 0 && this.o.prefetch === 0) {
          await this.park(true);
          continue;
        } else {
          // With read-ahead the next batch is read while the last entries of this one run.
          await this.readNew();
        }
        failures = 0;
      } catch (err) {
        if (this.stopping) break;
        this.slotParked = false;
        this.acks.schedule();
        failures++;
        if (isNoGroup(err)) {
          await this.recoverGroup().catch((e: unknown) => this.log.warn(`group ${this.name}: recreating the group failed (${errorText(e)})`));
          if (failures === 1) continue;
        }
        const delay = Math.min(50 * 2 ** failures, 5000);
        this.log.warn(`group ${this.name}: read failed (${errorText(err)}); retrying in ${delay} ms`);
        await this.reader.nap(delay);
      }
    }
  }

  /** Waits for a handler to finish (then one turn, so completions landing together free their slots). */
  private async park(forSlot: boolean): Promise<void> {
    this.slotParked = forSlot;
    if (!forSlot) this.acks.schedule();
    await new Promise<void>((r) => (this.wake = r));
    await new Promise((r) => setImmediate(r));
  }

  private async readNew(): Promise<void> {
    const blockMs = this.cfg.blockMs ?? 5000;
    this.slotParked = false;
    const free = this.free;
    const entries = await this.reader.read(free + this.o.prefetch, '>', blockMs);
    if (entries.length === 0) return;
    // New entries come in log order, each after every entry read before: the last is the newest.
    this.see(entries[entries.length - 1].streamId);
    if (entries.length <= free) {
      for (const e of entries) this.dispatch(e, 1, false);
      return;
    }
    // The queue is empty here (reads wait for it to drain): it becomes the rest of this batch.
    this.aheadQ = entries;
    this.aheadAt = free;
    for (let i = 0; i < free; i++) this.dispatch(entries[i], 1, false);
  }

  /** Starts read-ahead entries, oldest first, while slots are free (none once stopping). */
  private pump(): void {
    while (this.aheadAt < this.aheadQ.length && this.running.size < this.o.concurrency && !this.stopping) {
      this.dispatch(this.aheadQ[this.aheadAt++], 1, false);
    }
  }

  /**
   * On stop: the read-ahead entries never started stay pending (never acknowledged), and are made
   * reclaimable at once: `XCLAIM … IDLE <ackTimeoutMs> RETRYCOUNT 0 JUSTID` marks them idle past
   * the ack timeout and takes back the delivery this member counted without handling them. If
   * that fails they still are pending, reclaimed after the ack timeout.
   */
  private async release(): Promise<void> {
    if (this.aheadAt >= this.aheadQ.length) return;
    const ids = this.aheadQ.slice(this.aheadAt).map((e) => e.streamId);
    this.aheadQ = [];
    this.aheadAt = 0;
    try {
      for (let i = 0; i < ids.length; i += 1000) {
        await cmd(this.conn.client, 'XCLAIM', [this.k.log, this.o.group, this.consumer, 0, ...ids.slice(i, i + 1000), 'IDLE', this.o.ackTimeoutMs, 'RETRYCOUNT', 0, 'JUSTID']);
      }
    } catch (err) {
      this.log.warn(`group ${this.name}: releasing ${ids.length} read-ahead entries failed (${errorText(err)}); they are reclaimed after the ack timeout`);
    }
  }

  /** One of this member's own pending entries (`XREADGROUP … COUNT 1 <cursor>`), run alone; none left ends the phase. */
  private async readOwn(): Promise<void> {
    this.slotParked = false;
    const [e] = await this.reader.read(1, this.cursor);
    if (e === undefined) {
      this.phase = 'new';
      return;
    }
    this.cursor = e.streamId;
    const n = (await this.reclaimer.countsOf([e])).get(e.streamId) ?? 1;
    if (n > this.o.maxDeliveries && e.payload !== null) await this.reclaimer.bury(e.streamId, 0);
    else this.dispatch(e, n);
  }

  /** Remembers `streamId` when it is the newest entry this member has read. */
  private see(streamId: string): void {
    if (this.lastSeen === undefined || compareStreamIds(streamId, this.lastSeen) > 0) this.lastSeen = streamId;
  }

  /**
   * Starts the handler of one entry, or acknowledges and reports it lost when it has no fields.
   * `see`: false when the caller already recorded the newest id of its batch.
   */
  private dispatch(e: GroupEntry, deliveries: number, see = true): void {
    if (this.running.has(e.streamId)) return;
    if (see) this.see(e.streamId);
    let id: string;
    try {
      id = eventIdOf(e.streamId);
    } catch {
      id = e.streamId;
    }
    if (e.payload === null || id === e.streamId) {
      this.ack(e.streamId);
      this.report('lost', [id], `entry ${id} was deleted from the log before it was handled`);
      return;
    }
    let event: GroupEvent;
    try {
      event = new GroupEvent(id, this.cfg.topic, decodePayload(e.payload) ?? null, e.streamId, deliveries);
    } catch (err) {
      // Not JSON: a failed delivery, as a throwing handler's (retried, then dead-lettered).
      this.failed(e.streamId, deliveries, err);
      this.wakeLoop();
      return;
    }
    this.running.set(e.streamId, event);
    void this.run(e, id, deliveries, event);
  }

  /** Runs one entry's handler, then acknowledges it (or records the failure) and frees its slot. */
  private async run(e: GroupEntry, id: string, deliveries: number, event: GroupEvent): Promise<void> {
    try {
      const t = this.cfg.tracer;
      await (t ? t.handle({ topic: this.topic, group: this.o.group, id, deliveries, traceparent: e.tp }, async () => this.cfg.handler(event)) : this.cfg.handler(event));
      this.ack(e.streamId);
    } catch (err) {
      this.failed(e.streamId, deliveries, err);
    } finally {
      this.running.delete(e.streamId);
      if (this.aheadAt < this.aheadQ.length) {
        this.pump();
        // Entries still waiting: the loop has nothing to do yet (its next read waits for them).
        if (this.aheadAt < this.aheadQ.length && !this.stopping) return;
      }
      this.wakeLoop();
    }
  }

  /** Wakes the loop when it waits for a slot or for running handlers. */
  private wakeLoop(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private failed(streamId: string, deliveries: number, err: unknown): void {
    if (this.lastError.size >= 10_000) this.lastError.delete(this.lastError.keys().next().value as string);
    this.lastError.set(streamId, errorText(err));
    if (this.stopping) return;
    // Escaped: the handler's error text is untrusted, and one failure must stay one log line.
    this.log.warn(`group ${this.name}: handler failed on ${streamId} (delivery ${deliveries}): ${escapeControls(errorText(err))}`);
    // The last allowed delivery failed: dead-letter now rather than after the ack timeout.
    if (deliveries >= this.o.maxDeliveries) void this.reclaimer.bury(streamId, 0);
  }

  /** Queues an acknowledgement: it rides on the loop's next read when the loop waits for this slot, else goes out next turn. */
  private ack(streamId: string): void {
    this.lastError.delete(streamId);
    this.acks.push(streamId, this.slotParked && !this.stopping);
  }

  /** Reports a loss on this loop's `losses$` and on the process-wide stream. */
  private report(kind: GroupLossKind, ids: readonly string[], detail: string, extra: Pick<GroupLoss, 'count' | 'first' | 'last'> = {}): void {
    const count = extra.count ?? (kind === 'group-recreated' ? undefined : ids.length);
    const loss: GroupLoss = { kind, topic: this.topic, group: this.o.group, consumer: this.consumer, ids, count, first: extra.first, last: extra.last, detail, at: new Date() };
    this.log.warn(`group ${this.name}: ${detail}`);
    this.#losses.next(loss);
    reportProcessLoss(loss);
  }

  /** After NOGROUP, seen by the loop or the timer: recreates the group (once at a time) and reports the loss. */
  private recoverGroup(): Promise<void> {
    this.recovering ??= this.recover().finally(() => (this.recovering = undefined));
    return this.recovering;
  }

  private async recover(): Promise<void> {
    const seen = this.reclaimer.snapshot;
    const { start, created } = await this.reclaimer.recover(this.lastSeen);
    this.phase = 'own';
    this.cursor = '0';
    if (!created && seen === undefined) return; // recreated a moment ago: reported then
    const lost = estimateLoss(seen);
    this.report('group-recreated', [], `the log or the group vanished (NOGROUP); the group is back at ${start}: ${lost.detail}`, lost);
  }
}
