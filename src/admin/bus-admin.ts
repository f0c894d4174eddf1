import type { BusService } from '../bus/bus-service.js';
import type { DeadLetter, RetentionPolicy } from '../bus/bus-types.js';
import { eventIdOf } from '../core/event-id.js';
import { cmd } from '../bus/consumer-group/index.js';
import { fields, text } from '../bus/consumer-group/index.js';
import type { Json } from '../core/codec.js';
import type { EchoMqConnection } from '../core/connection/index.js';
import { busAdminWire, type BulkReply } from '../core/wire/index.js';
import { InvalidOptionError, NotFoundError } from '../core/errors.js';
import { fromReplyError } from '../core/reply-errors.js';
import { topicKeys } from '../core/keys.js';
import { bulkLimit, type NamePage } from './queue-admin.js';
import { assertKnown, readEntries, registryPage, type EntryProblem } from './registry.js';
import { checkDeadLetterPage, deadLetterById, deadLetterPage, type DeadLetterEntry, type DeadLetterPage, type DeadLetterPageOptions } from './dead-letter-pages.js';
import { topicMemory } from './topic-memory.js';

/** A topic as an operator sees it. */
export interface TopicInfo {
  /** The topic's name. */
  readonly name: string;
  /** Entries in the live log. */
  readonly length: number;
  /** The newest event's id, when the log has one. */
  readonly lastEventId?: string;
  /** Consumer groups on the log. */
  readonly groups: number;
  /** Dead letters kept. */
  readonly deadLetters: number;
  /** Bytes of the live log: `MEMORY USAGE` of the stream (sampled by the server), or an estimate (`logBytesEstimated`). */
  readonly logBytes?: number;
  /** True when `logBytes` is an estimate from the newest entries' sizes (the server refused `MEMORY USAGE`). */
  readonly logBytesEstimated?: boolean;
  /** Archive segments kept. */
  readonly archiveSegments?: number;
  /** Bytes of the archive (its segments' total length, kept by the trims in meta `archiveBytes`); absent until a trim counted it. */
  readonly archiveBytes?: number;
  /** In a `topics` page only: why the entry could not be read (its figures are then 0), as `EMQ_<CODE> message`. */
  readonly error?: string;
  /** In a `topics` page only, with `error`: `invalid name` (a registry entry the key grammar refuses) or `unreadable`. */
  readonly problem?: EntryProblem;
}

/** One consumer group of a topic, with its backlog. */
export interface GroupInfo {
  /** The group's name. */
  readonly name: string;
  /** Members that have read from it. */
  readonly consumers: number;
  /** Entries delivered and not yet acknowledged. */
  readonly pending: number;
  /** Entries not yet delivered to the group (null when the server cannot tell, e.g. after a deletion in the log). */
  readonly lag: number | null;
  /** The last entry delivered (branded event id), when any was. */
  readonly lastDeliveredId?: string;
}

const STREAM_ID = /^\d{1,20}-\d{1,20}$/;
const branded = (streamId: string): string | undefined => (streamId === '0-0' ? undefined : eventIdOf(streamId));

/**
 * The operator surface of the Bus (docs/admin.md): the registry of topics, groups with lag and
 * pending counts, dead letters (list, replay to the topic, purge) and the retention policy. A
 * topic nobody announced and that holds no log, dead letters or meta is `NotFoundError`.
 */
export class BusAdmin {
  constructor(
    private readonly conn: EchoMqConnection,
    private readonly bus: BusService,
  ) {}

  /** One page of the known topics, in name order, after `after`. */
  async topics(opts: { after?: string; limit?: number } = {}): Promise<NamePage<TopicInfo>> {
    const page = await registryPage(this.conn, 'topics', opts.after, bulkLimit(opts.limit ?? 100));
    const { items, unreadable } = await readEntries(this.conn, 'topics', page.names, (t) => this.read(t), (t) => ({ name: t, length: 0, groups: 0, deadLetters: 0 }));
    return { items, next: page.next, unreadable };
  }

  /** One topic's log length and bytes, newest event, groups, dead letters and archive figures. */
  async topic(topic: string): Promise<TopicInfo> {
    await this.assertKnown(topic);
    return this.read(topic);
  }

  /** The topic's consumer groups with their pending and lag counts. */
  async groups(topic: string): Promise<GroupInfo[]> {
    await this.assertKnown(topic);
    const k = topicKeys(topic);
    if ((await this.conn.client.exists(k.log)) === 0) return [];
    const rows = (await cmd(this.conn.client, 'XINFO', ['GROUPS', k.log])) as unknown[];
    return rows.map(fields).map((g) => {
      const lag = g.get('lag');
      return {
        name: text(g.get('name')),
        consumers: Number(g.get('consumers')),
        pending: Number(g.get('pending')),
        lag: lag === null || lag === undefined ? null : Number(lag),
        lastDeliveredId: branded(text(g.get('last-delivered-id'))),
      };
    });
  }

  /** The newest dead letters, newest first (`count` 1..1000, default 100). */
  async deadLetters<T = Json>(topic: string, opts: { count?: number } = {}): Promise<DeadLetter<T>[]> {
    topicKeys(topic);
    if (opts.count !== undefined) bulkLimit(opts.count);
    await this.assertKnown(topic);
    return this.bus.deadLetters<T>(topic, opts);
  }

  /** One page of dead letters newest first, of one group when `group` is given (bounded: `examined` says how many entries were read). */
  async deadLetterPage(topic: string, opts: DeadLetterPageOptions = {}): Promise<DeadLetterPage> {
    const k = topicKeys(topic);
    const o = checkDeadLetterPage(opts);
    await this.assertKnown(topic);
    return deadLetterPage(this.conn.client, k, o);
  }

  /** One dead letter by its dead id (`DeadLetterEntry.deadId`); `NotFoundError` when there is none. */
  async deadLetter(topic: string, deadId: string): Promise<DeadLetterEntry> {
    const k = topicKeys(topic);
    await this.assertKnown(topic);
    const e = await deadLetterById(this.conn.client, k, deadId);
    if (!e) throw new NotFoundError(`no dead letter ${deadId} in topic ${topic}`);
    return e;
  }

  /** Publishes dead letters to the topic again (new event ids; every group gets them) and deletes them: the given ones (`deadId`s), or the oldest `limit`. */
  async replayDead(topic: string, opts: { ids?: readonly string[]; limit?: number } = {}): Promise<BulkReply> {
    return this.dead(topic, 'replay', opts);
  }

  /** Deletes dead letters: the given ones (`deadId`s), or the oldest `limit`. */
  async purgeDead(topic: string, opts: { ids?: readonly string[]; limit?: number } = {}): Promise<BulkReply> {
    return this.dead(topic, 'purge', opts);
  }

  /** The topic's retention policy. */
  async retention(topic: string): Promise<RetentionPolicy> {
    await this.assertKnown(topic);
    return this.bus.getRetention(topic);
  }

  /** Replaces the topic's retention policy (absent fields: unbounded). */
  async setRetention(topic: string, policy: RetentionPolicy): Promise<void> {
    topicKeys(topic);
    await this.assertKnown(topic);
    await this.bus.setRetention(topic, policy);
  }

  /** Throws `NotFoundError` unless the topic was announced or holds a log, dead letters or meta. */
  assertKnown(topic: string): Promise<void> {
    const k = topicKeys(topic);
    return assertKnown(this.conn, 'topics', topic, [k.meta, k.log, k.dead], 'topic');
  }

  private async dead(topic: string, action: 'replay' | 'purge', opts: { ids?: readonly string[]; limit?: number }): Promise<BulkReply> {
    const k = topicKeys(topic);
    const ids = opts.ids ?? [];
    if (!Array.isArray(ids) || ids.length > 1000 || ids.some((id) => typeof id !== 'string' || !STREAM_ID.test(id))) {
      throw new InvalidOptionError('ids must be at most 1000 dead-letter ids (DeadLetter.deadId, `<ms>-<seq>`)');
    }
    const limit = bulkLimit(opts.limit);
    await this.assertKnown(topic);
    if (opts.ids !== undefined && ids.length === 0) return { count: 0, more: false };
    const r = await busAdminWire.dead(this.conn.scriptClient, k, action, limit, ids);
    if (action === 'replay' && r.count > 0) await this.bus.trim(topic).catch(() => undefined); // the topic's retention, as after a publish
    return r;
  }

  private async read(topic: string): Promise<TopicInfo> {
    const k = topicKeys(topic);
    try {
      const [length, dead, newest, groups] = await Promise.all([
        this.conn.client.xlen(k.log),
        this.conn.client.xlen(k.dead),
        this.conn.client.xrevrange(k.log, '+', '-', 'COUNT', 1),
        this.conn.client.exists(k.log).then((e) => (e ? (cmd(this.conn.client, 'XINFO', ['GROUPS', k.log]) as Promise<unknown[]>) : [])),
      ]);
      const memory = await topicMemory(this.conn.client, k, length);
      return { name: topic, length, lastEventId: newest[0] ? branded(newest[0][0]) : undefined, groups: groups.length, deadLetters: dead, ...memory };
    } catch (err) {
      throw fromReplyError(err);
    }
  }
}
