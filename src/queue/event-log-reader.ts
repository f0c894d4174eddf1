import type { EchoMqConnection, ValkeyClient } from '../core/connection/index.js';
import type { Json } from '../core/codec.js';
import { decodeExtras } from '../core/extras.js';
import { describeError } from '../core/reply-errors.js';
import { queueKeys, type QueueKeys } from '../core/keys.js';
import type { ConsumerLogger } from '../core/logger.js';
import type { QueueEventKind } from './job.js';
import { decodeStored } from './stored-text.js';

/** What `@OnQueueEvent` listens for: a lifecycle kind, or `failed` (an attempt failed: `retried` or `buried`). */
export type QueueEventName = QueueEventKind | 'failed';

/** One job's lifecycle event as an `@OnQueueEvent` handler receives it (one call per job). */
export interface QueueEventDetail<R = Json> {
  /** The queue. */
  readonly queue: string;
  /** The kind the handler subscribed to that matched (`failed` for a `retried` or `buried` transition it took as a failure). */
  readonly kind: QueueEventName;
  /** The job's id. */
  readonly id: string;
  /** When it happened (server clock for `fleet`, this process's clock for `local`). */
  readonly at: Date;
  /** `local`: told by this process's own consumer; `fleet`: read from the queue's lifecycle log. */
  readonly scope: 'local' | 'fleet';
  /** The job's name (`fleet`: from its row; `local`: not carried). */
  readonly name?: string;
  /** `completed`: the handler's result (`fleet`: read from the row; absent once the row is trimmed). */
  readonly result?: R;
  /** `failed`, `retried`, `buried`: the error text stored on the job. */
  readonly error?: string;
  /** The attempt: `local`, the one that ended; `fleet`, the row's attempts when it was read. */
  readonly attempt?: number;
  /** `failed`: what followed, another attempt (`retry`) or the morgue (`dead`). */
  readonly outcome?: 'retry' | 'dead';
  /** `fleet`: the lifecycle log entry's stream id (the resume point). */
  readonly logId?: string;
}

/** Where an `EventLogReader` sends what it reads; a handler that throws leaves its entry unacknowledged. */
export type QueueEventSink = (event: QueueEventDetail) => Promise<void> | void;

/** An `EventLogReader`'s settings. */
export interface EventLogReaderOptions {
  readonly queue: string;
  /** The stream consumer group (1..100 of A-Z a-z 0-9 _ . -): every group sees every event; members of one split them. */
  readonly group: string;
  /** This member's name in the group. */
  readonly consumer: string;
  /** The kinds wanted; entries of other kinds are acknowledged unread. */
  readonly kinds: readonly QueueEventName[];
  readonly sink: QueueEventSink;
  readonly logger?: ConsumerLogger;
  /** An entry left unacknowledged (a handler threw, a member died) is taken over after it was idle this long. Default 30000. */
  readonly reclaimIdleMs?: number;
}

type StreamEntry = [string, string[] | null];
/** Kinds whose rows are read for their result, error, attempt and name. */
const ROW_KINDS = new Set(['completed', 'retried', 'buried', 'cancelled']);
const BLOCK_MS = 1000;
const COUNT = 100;

const fieldsOf = (flat: readonly string[] | null): Record<string, string> => {
  const o: Record<string, string> = {};
  for (let i = 0; flat && i + 1 < flat.length; i += 2) o[flat[i]] = flat[i + 1];
  return o;
};

/**
 * Reads a queue's lifecycle log (the bounded stream `emq:{q}:events`, written when the queue's
 * `eventsLog` is above 0) in a stream consumer group: at least once (an entry is acknowledged
 * after its handler calls resolved; an entry left pending is taken over after `reclaimIdleMs`)
 * and resumable (the group's position is stored in Valkey, so a restarted reader resumes where
 * the group stopped, events logged while it was down included). A log entry carries kinds and
 * ids only: for `completed`, `retried`, `buried` and `cancelled`, the result, error, attempts
 * and name are read from the job rows, one `HMGET` per job, a read's all in one pipeline; a
 * read's entries are acknowledged in one `XACK` after their handlers resolved. The group is created at `open` at the log's end (`$`), so what is logged from then on is seen.
 */
export class EventLogReader {
  private readonly k: QueueKeys;
  private blocker?: ValkeyClient;
  private stopped = false;
  private loop?: Promise<void>;
  private lastReclaim = 0;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly o: EventLogReaderOptions,
  ) {
    this.k = queueKeys(o.queue);
  }

  /** Creates the group at the log's end when it does not exist yet (its stored position wins when it does). */
  async open(): Promise<void> {
    try {
      await this.conn.client.call('XGROUP', 'CREATE', this.k.events, this.o.group, '$', 'MKSTREAM');
    } catch (err) {
      if (!String((err as Error).message).startsWith('BUSYGROUP')) throw err;
    }
  }

  /** Starts the read loop (after `open`). */
  start(): void {
    this.loop ??= this.run();
  }

  /**
   * Stops reading: the entries being handled finish (waited for at most `deadlineMs`, default
   * 10 s); an entry read but not handled stays pending and is taken over later.
   */
  async stop(deadlineMs = 10_000): Promise<void> {
    this.stopped = true;
    if (this.blocker) this.conn.release(this.blocker);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.loop, new Promise<void>((r) => (timer = setTimeout(r, deadlineMs)))]);
    clearTimeout(timer);
  }

  private async run(): Promise<void> {
    let delay = 100;
    // This member's own pending entries once (a restart under the same member name), then new
    // ones; what stays pending after that (a sink that threw) is taken over by `reclaim`.
    let from = '0';
    while (!this.stopped) {
      try {
        if (Date.now() - this.lastReclaim >= (this.o.reclaimIdleMs ?? 30_000) / 2) await this.reclaim();
        this.blocker ??= await this.conn.blockingClient();
        const args = ['GROUP', this.o.group, this.o.consumer, 'COUNT', COUNT, ...(from === '>' ? ['BLOCK', BLOCK_MS] : []), 'STREAMS', this.k.events, from];
        const reply = (await this.blocker.call('XREADGROUP', ...args)) as [string, StreamEntry[]][] | null;
        const entries = reply?.[0]?.[1] ?? [];
        if (entries.length > 0) await this.handle(entries);
        from = '>';
        delay = 100;
      } catch (err) {
        if (this.stopped) break;
        this.o.logger?.warn(`reading the lifecycle log of "${this.o.queue}" in group "${this.o.group}": ${describeError(err)}`);
        if (this.blocker) this.conn.release(this.blocker);
        this.blocker = undefined;
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  /** Takes over entries other members (or this one, before a restart) left pending too long. */
  private async reclaim(): Promise<void> {
    this.lastReclaim = Date.now();
    const r = (await this.conn.client.call('XAUTOCLAIM', this.k.events, this.o.group, this.o.consumer, this.o.reclaimIdleMs ?? 30_000, '0-0', 'COUNT', COUNT)) as [string, StreamEntry[], string[]?];
    const entries = (r?.[1] ?? []).filter((e) => Array.isArray(e) && e[1]);
    if (entries.length > 0) await this.handle(entries);
  }

  /**
   * Handles a read's entries in order; acknowledges those whose handler calls all resolved, in one
   * `XACK` after the read's handlers ran (acknowledging later never loses an entry: one not yet
   * acknowledged is read again). At the first entry a handler threw for, it stops: that entry and
   * the later ones stay pending, in order, for the takeover.
   */
  private async handle(entries: readonly StreamEntry[]): Promise<void> {
    const parsed = entries.map(([logId, flat]) => {
      const f = fieldsOf(flat);
      const kinds = this.o.kinds.filter((k) => k === f.e || (k === 'failed' && (f.e === 'retried' || f.e === 'buried')));
      return { logId, kind: f.e, ids: f.ids ? f.ids.split(' ') : [], at: new Date(Number(f.at)), kinds };
    });
    const rowIds = [...new Set(parsed.filter((p) => p.kinds.length > 0 && ROW_KINDS.has(p.kind)).flatMap((p) => p.ids))];
    const rows = await this.readRows(rowIds);
    const acks: string[] = [];
    try {
      for (const p of parsed) {
        let ok = true;
        for (const id of p.kinds.length > 0 ? p.ids : []) {
          const row = rows.get(id);
          for (const kind of p.kinds) {
            try {
              const r = this.o.sink(this.detail(kind, p, id, row));
              // A synchronous sink costs no microtask turn; a promise is awaited as before.
              if (r) await r;
            } catch (err) {
              ok = false;
              this.o.logger?.warn(`a "${kind}" handler of queue "${this.o.queue}" (group "${this.o.group}") threw for job ${id}; the log entry ${p.logId} stays pending: ${describeError(err)}`);
            }
          }
        }
        if (!ok) return; // this entry and later ones stay pending, in order, for the takeover
        acks.push(p.logId);
      }
    } finally {
      if (acks.length > 0) await this.conn.client.call('XACK', this.k.events, this.o.group, ...acks);
    }
  }

  private detail(kind: QueueEventName, p: { logId: string; kind: string; at: Date }, id: string, row?: (string | null)[]): QueueEventDetail {
    if (!row) return { queue: this.o.queue, kind, id, at: p.at, scope: 'fleet', logId: p.logId };
    const [result, error, attempts, x] = row;
    // One literal (no spread of a base object): this runs once per job per listener.
    return {
      queue: this.o.queue,
      kind,
      id,
      at: p.at,
      scope: 'fleet',
      logId: p.logId,
      name: x ? decodeExtras(x).n : undefined,
      result: p.kind === 'completed' && result ? decodeStored<Json>(result).value : undefined,
      error: p.kind !== 'completed' && error ? error : undefined,
      attempt: attempts ? Number(attempts) : undefined,
      outcome: kind === 'failed' ? (p.kind === 'buried' ? 'dead' : 'retry') : undefined,
    };
  }

  /**
   * The rows' result, error, attempts and extras: one `HMGET` per job, all of a read's in one
   * pipeline (one socket write for the read, not one per job; the rows share the queue's slot).
   */
  private async readRows(ids: readonly string[]): Promise<Map<string, (string | null)[]>> {
    const out = new Map<string, (string | null)[]>();
    if (ids.length === 0) return out;
    const p = this.conn.client.pipeline();
    for (const id of ids) p.hmget(this.k.job(id), 'result', 'error', 'attempts', 'x');
    const replies = (await p.exec()) ?? [];
    for (let i = 0; i < ids.length; i++) {
      const [err, row] = replies[i] ?? [new Error(`no reply to the row read of job ${ids[i]}`), null];
      if (err) throw err;
      out.set(ids[i], row as (string | null)[]);
    }
    return out;
  }
}
