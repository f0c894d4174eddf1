import { Subject } from 'rxjs';
import { decodePayload } from '../protocol/codec.js';
import { InvalidOptionError } from '../protocol/errors.js';
import type { EchoMqConnection, ValkeyClient } from '../protocol/connection.js';
import { assertName, topicKeys, type TopicKeys } from '../protocol/keys.js';
import type { ConsumerLogger } from '../queue/consumer.js';
import { eventIdOf } from './event-id.js';
import { busLosses$, type GroupLoss, type GroupLossKind } from './group-losses.js';
import { consumerName, resolveGroupOptions, startId, type EventHandler, type OnEventOptions, type ResolvedGroupOptions } from './group-options.js';
import { GroupReclaimer } from './group-reclaim.js';
import { cmd, compareStreamIds, createGroup, errorText, isNoGroup, readGroup, type GroupEntry } from './group-wire.js';

/** Everything a group loop needs. */
export interface GroupConsumerConfig {
  readonly topic: string;
  readonly options: OnEventOptions;
  readonly handler: EventHandler<unknown>;
  /** Instance part of the consumer name (default `ECHOMQ_INSTANCE`, else "0"). */
  readonly instance?: string;
  /** The whole consumer name, overriding `<hostname>-<instance>` (tests run two members in one process). */
  readonly consumer?: string;
  /** Dead-letter log cap (1..1,000,000). Default 10,000. */
  readonly deadCap?: number;
  /** Longest XREADGROUP BLOCK (ms). Default 5000. */
  readonly blockMs?: number;
  readonly logger?: ConsumerLogger;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const silent: ConsumerLogger = { warn: () => undefined, error: () => undefined };

/**
 * A supervised consumer-group loop on one topic's log, usable without Nest. It creates its group
 * (idempotently), re-reads its own pending entries first, then reads new ones with a finite
 * BLOCK on a dedicated connection, runs up to `concurrency` handlers and acknowledges (batched)
 * only after success. A timer keeps running entries fresh (`XCLAIM … JUSTID`) and reclaims
 * entries idle past the ack timeout; entries over the delivery limit go to the dead-letter log.
 * `NOGROUP` (log or group deleted) recreates the group and reports the loss on `losses$`.
 */
export class GroupConsumer {
  /** The topic's keys. */
  readonly k: TopicKeys;
  /** The validated options with defaults. */
  readonly o: ResolvedGroupOptions;
  /** This member's consumer name in the group. */
  readonly consumer: string;
  /** Lost, recreated and dead-lettered reports of this loop (also sent to `busLosses$`). */
  readonly losses$ = new Subject<GroupLoss>();
  /** Stream ids of the entries whose handlers are running → their abort controllers. */
  readonly running = new Map<string, AbortController>();
  /** Last error text seen per stream id (bounded), recorded with a dead letter. */
  readonly lastError = new Map<string, string>();
  /** Where warnings go. */
  readonly log: ConsumerLogger;
  /** Dead-letter log cap. */
  readonly deadCap: number;
  private stopping = false;
  private phase: 'own' | 'new' = 'own';
  private cursor = '0';
  private lastSeen?: string;
  private toAck: string[] = [];
  private flushQueued = false;
  private blocker?: ValkeyClient;
  private timer?: NodeJS.Timeout;
  private loopDone?: Promise<void>;
  private wake?: () => void;
  private halt?: () => void;
  private readonly halted = new Promise<void>((r) => (this.halt = r));
  /** The timer side: heartbeat, reclaim, dead letters, recovery. */
  readonly reclaimer: GroupReclaimer;

  constructor(
    readonly conn: EchoMqConnection,
    private readonly cfg: GroupConsumerConfig,
  ) {
    this.k = topicKeys(cfg.topic);
    this.o = resolveGroupOptions(cfg.options);
    this.consumer = cfg.consumer ?? consumerName(cfg.instance);
    assertName(this.consumer, 'consumer');
    this.deadCap = cfg.deadCap ?? 10_000;
    if (!Number.isInteger(this.deadCap) || this.deadCap < 1 || this.deadCap > 1_000_000) {
      throw new InvalidOptionError(`deadCap must be an integer in 1..1000000, got ${String(this.deadCap)}`);
    }
    this.log = cfg.logger ?? silent;
    this.reclaimer = new GroupReclaimer(this);
  }

  /** The topic. */
  get topic(): string {
    return this.cfg.topic;
  }

  /** Free handler slots. */
  get free(): number {
    return this.o.concurrency - this.running.size;
  }

  /** True once `stop` was called. */
  get isStopping(): boolean {
    return this.stopping;
  }

  /** Creates the group if needed and starts reading. */
  async start(): Promise<void> {
    await createGroup(this.conn.client, this.k, this.o.group, startId(this.o.from));
    this.blocker = await this.conn.blockingClient();
    const every = Math.max(50, Math.min(Math.floor(this.o.ackTimeoutMs / 3), 5000));
    this.timer = setInterval(() => void this.reclaimer.tick(), every);
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
    this.halt?.();
    if (this.timer) clearInterval(this.timer);
    if (this.blocker) this.conn.release(this.blocker);
    this.wake?.();
    await this.loopDone;
    const until = Date.now() + deadlineMs;
    while (this.running.size > 0 && Date.now() < until) await sleep(10);
    for (const ac of this.running.values()) ac.abort(new Error('EchoMQ group consumer shut down'));
    const settle = Date.now() + 500;
    while (this.running.size > 0 && Date.now() < settle) await sleep(5);
    await this.flushAcks();
    await this.reclaimer.idle();
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      if (this.free <= 0) {
        await new Promise<void>((r) => (this.wake = r));
        // Let completions that land together free their slots before the next read.
        await new Promise((r) => setImmediate(r));
        continue;
      }
      try {
        if (this.phase === 'own') await this.readOwn();
        else {
          const blockMs = this.cfg.blockMs ?? 5000;
          const read = readGroup(this.blocker!, this.k, this.o.group, this.consumer, this.free, '>', blockMs);
          const entries = await this.watchdog(read, blockMs + 10_000);
          for (const e of entries) this.dispatch(e, 1);
        }
        failures = 0;
      } catch (err) {
        if (this.stopping) break;
        if (isNoGroup(err)) {
          await this.recover().catch((e: unknown) => this.log.warn(`group ${this.name}: recreating the group failed (${errorText(e)})`));
          continue;
        }
        failures++;
        const delay = Math.min(50 * 2 ** failures, 5000);
        this.log.warn(`group ${this.name}: read failed (${errorText(err)}); retrying in ${delay} ms`);
        await sleep(delay);
      }
    }
  }

  /** `topic/group/consumer`, for logs. */
  get name(): string {
    return `${this.topic}/${this.o.group}/${this.consumer}`;
  }

  /** One page of this member's own pending entries (`XREADGROUP … <cursor>`); empty ends the phase. */
  private async readOwn(): Promise<void> {
    const entries = await readGroup(this.blocker!, this.k, this.o.group, this.consumer, this.free, this.cursor);
    if (entries.length === 0) {
      this.phase = 'new';
      return;
    }
    this.cursor = entries[entries.length - 1].streamId;
    const counts = await this.reclaimer.countsOf(entries);
    for (const e of entries) {
      const n = counts.get(e.streamId) ?? 1;
      if (n > this.o.maxDeliveries && e.payload !== null) await this.reclaimer.bury(e.streamId, 0);
      else this.dispatch(e, n);
    }
  }

  /** Starts the handler of one entry, or acknowledges and reports it lost when it has no fields. */
  dispatch(e: GroupEntry, deliveries: number): void {
    if (this.running.has(e.streamId)) return;
    if (this.lastSeen === undefined || compareStreamIds(e.streamId, this.lastSeen) > 0) this.lastSeen = e.streamId;
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
    const ac = new AbortController();
    this.running.set(e.streamId, ac);
    const text = e.payload;
    void (async () => {
      try {
        const payload = decodePayload(text) ?? null;
        const at = new Date(Number(e.streamId.slice(0, e.streamId.indexOf('-'))));
        await this.cfg.handler({ id, topic: this.topic, payload, at, deliveries, signal: ac.signal });
        this.ack(e.streamId);
      } catch (err) {
        this.failed(e.streamId, deliveries, err);
      } finally {
        this.running.delete(e.streamId);
        const w = this.wake;
        this.wake = undefined;
        w?.();
      }
    })();
  }

  private failed(streamId: string, deliveries: number, err: unknown): void {
    if (this.lastError.size >= 10_000) this.lastError.delete(this.lastError.keys().next().value as string);
    this.lastError.set(streamId, errorText(err));
    if (this.stopping) return;
    this.log.warn(`group ${this.name}: handler failed on ${streamId} (delivery ${deliveries}): ${errorText(err)}`);
    // The last allowed delivery failed: dead-letter now rather than after the ack timeout.
    if (deliveries >= this.o.maxDeliveries) void this.reclaimer.bury(streamId, 0);
  }

  /** Queues an acknowledgement; acks issued in one tick go out in one XACK. */
  ack(streamId: string): void {
    this.toAck.push(streamId);
    this.lastError.delete(streamId);
    if (this.flushQueued) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      void this.flushAcks();
    });
  }

  /** Sends queued acknowledgements; failed ones are kept for the next flush. */
  async flushAcks(): Promise<void> {
    while (this.toAck.length > 0) {
      const ids = this.toAck.splice(0, 1000);
      try {
        await cmd(this.conn.client, 'XACK', [this.k.log, this.o.group, ...ids]);
      } catch (err) {
        this.toAck.unshift(...ids);
        this.log.warn(`group ${this.name}: ack failed (${errorText(err)}); retried on the next tick`);
        return;
      }
    }
  }

  /** Reports a loss on this loop's `losses$` and on `busLosses$`. */
  report(kind: GroupLossKind, ids: readonly string[], detail: string): void {
    const loss: GroupLoss = { kind, topic: this.topic, group: this.o.group, consumer: this.consumer, ids, detail, at: new Date() };
    this.log.warn(`group ${this.name}: ${detail}`);
    this.losses$.next(loss);
    busLosses$.next(loss);
  }

  private async recover(): Promise<void> {
    const start = await this.reclaimer.recover(this.lastSeen);
    this.phase = 'own';
    this.cursor = '0';
    this.report('group-recreated', [], `the log or the group vanished (NOGROUP); the group is back at ${start}: entries not yet handled are lost`);
  }

  /** Races a blocking read against a timer; a read that hangs gets a fresh connection. */
  private async watchdog<T>(p: Promise<T>, ms: number): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const hang = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('blocking read hung past its BLOCK')), ms);
    });
    try {
      const stopped = this.halted.then((): never => {
        throw new Error('stopped');
      });
      return await Promise.race([p, hang, stopped]);
    } catch (err) {
      if (!this.stopping && err instanceof Error && err.message.startsWith('blocking read hung')) {
        p.catch(() => undefined);
        if (this.blocker) this.conn.release(this.blocker);
        this.blocker = await this.conn.blockingClient();
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }
}
