import { Logger, type OnModuleDestroy } from '@nestjs/common';
import { throwError, type Observable } from 'rxjs';
import { DEFAULT_MAX_PAYLOAD_BYTES, decodePayload, encodePayload, resolveCodec, type Json, type PayloadCodec } from '../core/codec.js';
import type { EchoMqConnection } from '../core/connection/index.js';
import { CoalescerPool } from '../core/coalescer.js';
import { BatchTooLargeError, InvalidOptionError } from '../core/errors.js';
import { fromReplyError } from '../core/reply-errors.js';
import { topicKeys } from '../core/keys.js';
import type { BusOptions } from './bus-options.js';
import type { DeadLetter, ReplayOptions, ReplayedEvent, RetentionPolicy, TrimResult } from './bus-types.js';
import { BUS_BATCH_LIMIT, EXPIRE_LIMIT, busWire, type PublishItem } from '../core/wire/index.js';
import type { BusTracer } from './bus-tracer.js';
import { eventIdOf } from '../core/event-id.js';
import { replay } from './replay.js';
import { SignalHub } from '../core/signal-hub.js';
import { announce } from '../core/announce.js';
import { processLosses$, type GroupLoss } from './consumer-group/index.js';
import type { ConsumerLogger } from '../core/logger.js';
import { DEFAULT_ARCHIVE_MAX_AGE_MS, DEFAULT_ARCHIVE_MAX_BYTES, POLICY_FIELDS, mib, policyWarnings, readPolicy, resolvePolicy } from './retention-policy.js';

/** Default interval of automatic trims of the topics published to. */
export const TRIM_INTERVAL_MS = 5000;
/** Most trim script calls one `trim()` makes (each archives at most 1000 entries). */
const TRIM_ROUNDS = 100;

const positiveInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

/** The Bus: publish to a topic's retained log, replay it, signal, and keep its retention. */
export class BusService implements OnModuleDestroy {
  private readonly maxBytes: number;
  private readonly codec: PayloadCodec;
  private readonly trimEvery: number;
  private readonly hub: SignalHub;
  private readonly dirty = new Set<string>();
  /** Publish calls per topic: concurrent publishes share one script call, each still atomic. */
  private readonly batches = new CoalescerPool<PublishItem, string>(
    (topic) => {
      const k = topicKeys(topic);
      return (items) => busWire.publish(this.conn.scriptClient, k, this.maxBytes, items);
    },
    BUS_BATCH_LIMIT,
  );
  private trimTimer?: NodeJS.Timeout;
  private trimming: Promise<void> = Promise.resolve();
  private closed = false;
  /** `<kind> <topic>` of every retention warning logged (once per topic and kind). */
  private readonly warned = new Set<string>();
  private readonly log: ConsumerLogger;

  /**
   * Every loss a Bus consumer group of this process reports (`lost`, `group-recreated`,
   * `dead-lettered`; docs/bus.md): subscribe to alert on data loss. Read-only: unsubscribing
   * affects only the subscriber.
   */
  readonly losses$: Observable<GroupLoss> = processLosses$;

  constructor(
    protected readonly conn: EchoMqConnection,
    protected readonly options: BusOptions = {},
    /** Publish spans, and the traceparent each entry carries (docs/telemetry.md). */
    protected readonly tracer?: BusTracer,
    /** Where retention warnings go (an unbounded topic, a default applied). Default: Nest's `Logger`. */
    logger?: ConsumerLogger,
  ) {
    this.log = logger ?? new Logger('EchoMQ');
    if (options.defaultRetention !== undefined) resolvePolicy(options.defaultRetention, 'bus.defaultRetention');
    this.maxBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    this.codec = resolveCodec(options.codec, 'bus.codec');
    if (!positiveInt(this.maxBytes)) throw new InvalidOptionError('bus.maxPayloadBytes must be a positive integer');
    this.trimEvery = options.trimIntervalMs ?? TRIM_INTERVAL_MS;
    if (!Number.isSafeInteger(this.trimEvery) || this.trimEvery < 0) throw new InvalidOptionError('bus.trimIntervalMs must be an integer >= 0');
    this.hub = new SignalHub(conn, this.maxBytes);
  }

  /** Publishes one event; resolves to its branded event id (`evt…`). */
  async publish<T = Json>(topic: string, payload: T): Promise<string> {
    const [id] = await this.publishMany(topic, [payload]);
    return id;
  }

  /** Publishes up to 1000 events in one atomic script call; resolves to their ids, in order. */
  async publishMany<T = Json>(topic: string, payloads: readonly T[]): Promise<string[]> {
    topicKeys(topic); // the name is checked before anything else
    if (!Array.isArray(payloads)) throw new InvalidOptionError('publishMany takes an array of payloads');
    if (payloads.length > BUS_BATCH_LIMIT) throw new BatchTooLargeError(payloads.length, BUS_BATCH_LIMIT);
    if (payloads.length === 0) return [];
    const texts = payloads.map((p, i) => encodePayload(p, this.maxBytes, this.codec, payloads.length === 1 ? 'payload' : `[${i}]`));
    const send = async (tp?: string): Promise<string[]> => {
      const ids = await this.batches.submit(topic, tp ? texts.map((p) => ({ p, tp })) : texts);
      announce(this.conn, 'topics', topic); // after the publish went through: a refused one leaves the registry alone
      this.markDirty(topic);
      return ids.map(eventIdOf);
    };
    return this.tracer ? this.tracer.publish(topic, texts.length, send) : send();
  }

  /**
   * Replays a topic in mint order (or newest first), reading the archive where the live log no
   * longer reaches. Bad options reject the first `next()`.
   */
  replay<T = Json>(topic: string, options: ReplayOptions = {}): AsyncIterable<ReplayedEvent<T>> {
    return replay<T>(this.conn.client, topic, options);
  }

  /**
   * Sets (replaces) a topic's retention policy. An absent log bound is none; an absent archive
   * bound gets its default (7 days, 64 MiB) unless `unbounded: true`; an archive without a byte
   * bound logs a warning once per topic (docs/bus.md, "Bounds by default").
   */
  async setRetention(topic: string, policy: RetentionPolicy): Promise<void> {
    const k = topicKeys(topic);
    const stored = resolvePolicy(policy);
    await busWire.retention(this.conn.scriptClient, k, stored);
    const text = (v: number | string | undefined): string | null => (v === undefined ? null : String(v));
    this.warnPolicy(topic, readPolicy([text(stored.maxLen), text(stored.maxAgeMs), text(stored.archiveMaxAgeMs), text(stored.archiveMaxBytes)]));
    this.markDirty(topic);
  }

  /** A topic's retention policy as stored (`unbounded: true` when its archive has no byte bound by choice). */
  async getRetention(topic: string): Promise<RetentionPolicy> {
    const k = topicKeys(topic);
    return readPolicy(await this.conn.client.hmget(k.meta, ...POLICY_FIELDS));
  }

  /**
   * Applies the retention policy now: archives and cuts every due entry no consumer group still
   * needs (1000 entries per script call, up to 100 calls), and deletes archive segments beyond the
   * archive's age and byte bounds. First a topic without archive bounds gets the defaults, or
   * `bus.defaultRetention` when it has no policy (docs/bus.md, "Bounds by default").
   */
  async trim(topic: string): Promise<TrimResult> {
    const k = topicKeys(topic);
    await this.boundPolicy(topic);
    let archived = 0;
    let trimmed = 0;
    let expiredSegments = 0;
    for (let round = 0; round < TRIM_ROUNDS; round++) {
      const r = await busWire.trim(this.conn.scriptClient, k);
      archived += r.archived;
      trimmed += r.trimmed;
      expiredSegments += r.expired;
      if (!r.more && r.expired < EXPIRE_LIMIT) break;
    }
    return { archived, trimmed, expiredSegments };
  }

  /**
   * Sends a fire-and-forget signal to the topic's live subscribers (at most once). A bad topic
   * or payload rejects the returned promise (it never throws).
   */
  async signal<T = Json>(topic: string, payload: T): Promise<number> {
    return this.hub.publish(topicKeys(topic).signal, payload);
  }

  /**
   * The topic's signals, shared by all observers; bad JSON messages are dropped. A bad topic
   * errors the returned observable (it never throws).
   */
  signals<T = Json>(topic: string): Observable<T> {
    let channel: string;
    try {
      channel = topicKeys(topic).signal;
    } catch (err) {
      return throwError(() => err);
    }
    return this.hub.observe<T>(channel);
  }

  /** The newest dead letters of a topic (read only), newest first. */
  async deadLetters<T = Json>(topic: string, options: { count?: number } = {}): Promise<DeadLetter<T>[]> {
    const k = topicKeys(topic);
    const count = options.count ?? 100;
    if (!Number.isInteger(count) || count < 1 || count > 1000) throw new InvalidOptionError('deadLetters count must be an integer in 1..1000');
    let rows: [string, string[]][];
    try {
      rows = (await this.conn.client.xrevrange(k.dead, '+', '-', 'COUNT', count)) as [string, string[]][];
    } catch (err) {
      throw fromReplyError(err);
    }
    return rows.map(([deadId, fields]) => {
      const f: Record<string, string> = {};
      for (let i = 0; i < fields.length; i += 2) f[fields[i]] = fields[i + 1];
      let payload: T | undefined;
      try {
        payload = decodePayload<T>(f.p);
      } catch {
        payload = undefined;
      }
      const at = Number(f.at);
      return {
        id: f.id ?? '',
        deadId,
        group: f.group ?? '',
        consumer: f.consumer ?? '',
        deliveries: Number(f.deliveries ?? 0),
        error: f.error ?? '',
        payload,
        at: new Date(Number.isFinite(at) ? at : Number(deadId.split('-')[0])),
      };
    });
  }

  /** Stops automatic trims (waiting for one in flight) and closes the signal subscriber. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.trimTimer) clearTimeout(this.trimTimer);
    this.trimTimer = undefined;
    this.dirty.clear();
    await this.trimming;
    await this.hub.close();
  }

  /** Nest lifecycle: closes before the connection is closed at application shutdown. */
  async onModuleDestroy(): Promise<void> {
    await this.close();
  }

  /**
   * Before a trim: a topic without any policy gets `bus.defaultRetention` (else a warning once); a
   * policy without an archive byte bound (written by earlier bytes or a four-argument peer) gets
   * the default archive bounds and a warning once; an explicit `unbounded` one a warning once.
   */
  private async boundPolicy(topic: string): Promise<void> {
    const raw = await this.conn.client.hmget(topicKeys(topic).meta, ...POLICY_FIELDS);
    const p = readPolicy(raw);
    if (raw.every((v) => v === null) && this.options.defaultRetention) return this.setRetention(topic, this.options.defaultRetention);
    if (raw[3] === null && raw.some((v) => v !== null)) {
      const applied = { ...p, archiveMaxAgeMs: p.archiveMaxAgeMs ?? DEFAULT_ARCHIVE_MAX_AGE_MS, archiveMaxBytes: DEFAULT_ARCHIVE_MAX_BYTES };
      await busWire.retention(this.conn.scriptClient, topicKeys(topic), applied);
      this.warnOnce(
        topic,
        'default',
        `Bus topic ${JSON.stringify(topic)}: its retention policy had no archive byte bound; applied the default (archive kept ${applied.archiveMaxAgeMs} ms, at most ${mib(DEFAULT_ARCHIVE_MAX_BYTES)}). Choose with setRetention: archiveMaxBytes, archive: false or unbounded: true.`,
      );
    }
    this.warnPolicy(topic, p);
  }

  /** Logs the warnings a topic's policy earns, each once per topic. */
  private warnPolicy(topic: string, p: RetentionPolicy): void {
    for (const w of policyWarnings(topic, p)) this.warnOnce(topic, w.kind, w.message);
  }

  private warnOnce(topic: string, kind: string, message: string): void {
    const key = `${kind} ${topic}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.log.warn(message);
  }

  /** Schedules an automatic trim of `topic`: at most one per interval, on an unref'd timer. */
  private markDirty(topic: string): void {
    if (this.trimEvery === 0 || this.closed) return;
    this.dirty.add(topic);
    if (this.trimTimer) return;
    this.trimTimer = setTimeout(() => {
      this.trimTimer = undefined;
      const topics = [...this.dirty];
      this.dirty.clear();
      this.trimming = this.trimming.then(async () => {
        for (const t of topics) {
          if (this.closed) return;
          try {
            await this.trim(t);
          } catch {
            // Retried at the next publish; an explicit trim() reports the error.
          }
        }
      });
    }, this.trimEvery);
    this.trimTimer.unref();
  }
}
