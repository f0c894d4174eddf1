import type { EchoMqConnection } from '../../core/connection/index.js';
import { eventIdOf } from '../../core/event-id.js';
import type { TopicKeys } from '../../core/keys.js';
import type { ConsumerLogger } from '../../core/logger.js';
import type { AckBuffer } from './acks.js';
import { cmd, compareStreamIds, createGroup, deadLetter, errorText, isNoGroup, parseEntries, pending, type GroupEntry } from './group-wire.js';
import type { GroupLoss, GroupLossKind } from './losses.js';
import { startId, type ResolvedGroupOptions } from './options.js';
import { forgetGone, snapshotGroup, type GroupSnapshot } from './upkeep.js';

/** Most entries one isolation pass re-delivers (one at a time) before new entries get a turn. */
const PASS_CLAIMS = 100;
/** Most idle-entry listings of one pass, and the rows of one listing. */
const PASS_SCANS = 50;
const SCAN_ROWS = 10;

const brand = (s: string): string => {
  try {
    return eventIdOf(s);
  } catch {
    return s;
  }
};

/**
 * What the reclaimer reads of its group loop and asks of it: the loop (`GroupConsumer`) builds
 * one and passes it in, so the reclaimer never sees the loop's class or its other state.
 */
export interface ReclaimHost {
  /** The shared connection (its command and script clients). */
  readonly conn: EchoMqConnection;
  /** The topic's keys. */
  readonly k: TopicKeys;
  /** The group's options with defaults. */
  readonly o: ResolvedGroupOptions;
  /** This member's consumer name in the group. */
  readonly consumer: string;
  /** `topic/group/consumer`, for logs. */
  readonly name: string;
  /** Where warnings go. */
  readonly log: ConsumerLogger;
  /** Dead-letter log cap. */
  readonly deadCap: number;
  /** Idle time after which a member without pending entries counts as gone. */
  readonly forgetIdleMs: number;
  /** Stream ids of the entries whose handlers run here (kept fresh, never claimed). */
  readonly running: ReadonlyMap<string, unknown>;
  /** The read-ahead entries held here, not started yet (kept fresh too, never claimed). */
  readonly ahead: { has(streamId: string): boolean; ids(): string[]; count(): number };
  /** Last error text per stream id: written into a dead letter, dropped once the entry is settled. */
  readonly lastError: Map<string, string>;
  /** The loop's acknowledgements, flushed by every tick and before every claim. */
  readonly acks: Pick<AckBuffer, 'flush' | 'settled'>;
  /** True once the loop is stopping. */
  isStopping(): boolean;
  /** Starts the handler of a claimed entry (`deliveries`: its delivery count). */
  dispatch(e: GroupEntry, deliveries: number): void;
  /** Reports a loss (lost entries, a removed member, a dead letter). */
  report(kind: GroupLossKind, ids: readonly string[], detail: string, extra?: Pick<GroupLoss, 'count' | 'first' | 'last'>): void;
  /** Asks the loop for an isolation pass (idle entries are re-delivered one at a time). */
  requestIsolation(): void;
  /** Recreates the group after NOGROUP (once at a time) and reports the loss. */
  recoverGroup(): Promise<void>;
}

/**
 * The timer side of a group loop, one tick every min(ackTimeoutMs / 3, 5 s):
 * 1. heartbeat: `XCLAIM log g me 0 <running ids> JUSTID` resets the idle time of the entries
 *    whose handlers run here (the delivery count is not touched), so they are not reclaimed;
 * 2. flushes acknowledgements that failed earlier;
 * 3. dead-letters entries idle past the ack timeout whose delivery count reached the limit
 *    (`XPENDING … IDLE`, then dead-letter.lua, which re-checks idle time and pendency atomically);
 *    when other idle entries remain it asks the loop for an isolation pass (`claimOne`);
 * 4. removes members that are gone (`forgetGone`), and records a snapshot of the group so a
 *    vanished log can be reported with a count and a range.
 * The loop, never the timer, takes entries: a re-delivered entry may be the one that crashed its
 * last process, so it runs alone.
 */
export class GroupReclaimer {
  private busy?: Promise<void>;
  private cursor = '-';
  private claims = 0;
  private scans = 0;
  /** The last look at the group (see `snapshotGroup`). */
  snapshot?: GroupSnapshot;

  constructor(private readonly c: ReclaimHost) {}

  /** Runs one tick unless the previous one is still running. */
  tick(): Promise<void> {
    if (!this.busy) {
      this.busy = this.run()
        .catch((err: unknown) => {
          // The log or the group vanished while the loop waits for its handlers: recover now.
          if (isNoGroup(err) && !this.c.isStopping()) return this.c.recoverGroup().catch((e: unknown) => this.c.log.warn(`group ${this.c.name}: recreating the group failed (${errorText(e)})`));
          this.c.log.warn(`group ${this.c.name}: maintenance failed (${errorText(err)})`);
        })
        .finally(() => (this.busy = undefined));
    }
    return this.busy;
  }

  /** Resolves when no tick is running. */
  async idle(): Promise<void> {
    await this.busy;
  }

  /**
   * After NOGROUP: recreates the group after the last entry seen when the log still holds it (the
   * group alone was destroyed), else from the log's start (the log is new). Returns the start id,
   * and whether this call created the group (false: it was back already).
   */
  async recover(lastSeen: string | undefined): Promise<{ start: string; created: boolean }> {
    const { k, o } = this.c;
    const first = (await cmd(this.c.conn.client, 'XRANGE', [k.log, '-', '+', 'COUNT', 1])) as [string, unknown][];
    const head = first.length > 0 ? String(first[0][0]) : undefined;
    let start = '0';
    if (head !== undefined && lastSeen !== undefined && compareStreamIds(head, lastSeen) <= 0) start = lastSeen;
    else if (head !== undefined && lastSeen === undefined) start = startId(o.from);
    const created = await createGroup(this.c.conn.client, k, o.group, start);
    this.snapshot = undefined;
    return { start, created };
  }

  /** Delivery counts (XPENDING) of entries this member holds. */
  async countsOf(entries: readonly GroupEntry[]): Promise<Map<string, number>> {
    let lo = entries[0].streamId;
    let hi = lo;
    for (const e of entries) {
      if (compareStreamIds(e.streamId, lo) < 0) lo = e.streamId;
      if (compareStreamIds(e.streamId, hi) > 0) hi = e.streamId;
    }
    const rows = await pending(this.c.conn.client, this.c.k, this.c.o.group, { start: lo, end: hi, count: entries.length + this.c.running.size + this.c.ahead.count() + 16, consumer: this.c.consumer });
    return new Map(rows.map((r) => [r.streamId, r.deliveries]));
  }

  /** Runs dead-letter.lua for one entry and reports what it did. */
  async bury(streamId: string, minIdleMs: number): Promise<void> {
    try {
      const id = eventIdOf(streamId);
      const error = this.c.lastError.get(streamId) ?? '';
      const r = await deadLetter(this.c.conn.scriptClient, this.c.k, { group: this.c.o.group, consumer: this.c.consumer, streamId, eventId: id, error, minIdleMs, deadCap: this.c.deadCap });
      if (r.status !== 0) this.c.lastError.delete(streamId);
      if (r.status === 1) this.c.report('dead-lettered', [id], `event ${id} dead-lettered after ${r.deliveries} deliveries: ${error || 'delivery limit exceeded'}`);
      if (r.status === 2) this.c.report('lost', [id], `entry ${id} was deleted from the log while pending`);
    } catch (err) {
      this.c.log.warn(`group ${this.c.name}: dead-lettering ${streamId} failed (${errorText(err)}); retried by the next reclaim`);
    }
  }

  /**
   * One step of an isolation pass, run by the loop while no handler runs here. Looks at the next
   * idle entries (`XPENDING … IDLE`, which moves no delivery count), dead-letters those at the
   * limit, reports those gone from the log, and claims at most ONE other (`XCLAIM`, which counts
   * a delivery for it alone) and starts it. Returns false when the pass is over (nothing idle is
   * left, or its budget is spent): new entries are read again.
   */
  async claimOne(): Promise<boolean> {
    const c = this.c;
    const { k, o } = c;
    const client = c.conn.client;
    await c.acks.settled();
    void c.acks.flush(client); // written before the claim, on the same connection
    const rows = await pending(client, k, o.group, { idleMs: o.ackTimeoutMs, start: this.cursor, count: SCAN_ROWS });
    this.scans++;
    let claimed = false;
    for (const r of rows) {
      this.cursor = `(${r.streamId}`;
      if (c.running.has(r.streamId) || c.ahead.has(r.streamId)) continue;
      if (r.deliveries >= o.maxDeliveries) {
        await this.bury(r.streamId, o.ackTimeoutMs);
        continue;
      }
      const [inLog, got] = await Promise.all([
        cmd(client, 'XRANGE', [k.log, r.streamId, r.streamId]) as Promise<unknown[]>,
        cmd(client, 'XCLAIM', [k.log, o.group, c.consumer, o.ackTimeoutMs, r.streamId]),
      ]);
      const [e] = parseEntries(got);
      if (e === undefined) {
        // Not claimed: taken by another member meanwhile, or deleted from the log (XCLAIM then
        // drops it from the pending list): the latter is a loss.
        if (inLog.length === 0) c.report('lost', [brand(r.streamId)], `entry ${brand(r.streamId)} was deleted from the log before it was handled`);
        continue;
      }
      const n = (await this.countsOf([e])).get(e.streamId);
      if (n !== undefined) c.dispatch(e, n); // undefined: claimed away from us in between
      this.claims++;
      claimed = true;
      break;
    }
    const over = (!claimed && rows.length < SCAN_ROWS) || this.claims >= PASS_CLAIMS || this.scans >= PASS_SCANS;
    if (over || rows.length < SCAN_ROWS) this.cursor = '-';
    if (over) this.claims = this.scans = 0;
    return !over;
  }

  private async run(): Promise<void> {
    const c = this.c;
    const { k, o } = c;
    const client = c.conn.client;
    const ids = [...c.running.keys(), ...c.ahead.ids()];
    for (let i = 0; i < ids.length; i += 1000) {
      await cmd(client, 'XCLAIM', [k.log, o.group, c.consumer, 0, ...ids.slice(i, i + 1000), 'JUSTID']);
    }
    await c.acks.flush();
    if (c.isStopping()) return;

    const idle = await pending(client, k, o.group, { idleMs: o.ackTimeoutMs, count: 100 });
    let waiting = false;
    for (const r of idle) {
      if (c.running.has(r.streamId) || c.ahead.has(r.streamId)) continue;
      if (r.deliveries >= o.maxDeliveries) await this.bury(r.streamId, o.ackTimeoutMs);
      else waiting = true;
    }
    if (waiting) c.requestIsolation();

    for (const [name, had] of await forgetGone(client, k, o.group, c.consumer, c.forgetIdleMs)) {
      if (had > 0) c.report('lost', [], `member ${name} was removed while it held ${had} pending entries: they can no longer be reclaimed`, { count: had });
      else c.log.warn(`group ${c.name}: removed the gone member ${name}`);
    }
    this.snapshot = (await snapshotGroup(client, k, o.group)) ?? this.snapshot;
  }
}
