import type { GroupConsumer } from './group-consumer.js';
import { eventIdOf } from './event-id.js';
import { autoClaim, cmd, compareStreamIds, createGroup, deadLetter, errorText, pending, type GroupEntry } from './group-wire.js';
import { startId } from './group-options.js';


/**
 * The timer side of a group loop, one tick every min(ackTimeoutMs / 3, 5 s):
 * 1. heartbeat: `XCLAIM log g me 0 <running ids> JUSTID` resets the idle time of the entries
 *    whose handlers run here (the delivery count is not touched), so they are not reclaimed;
 * 2. flushes acknowledgements that failed earlier;
 * 3. dead-letters entries idle past the ack timeout whose delivery count reached the limit
 *    (`XPENDING … IDLE`, then dead-letter.lua, which re-checks idle time and pendency atomically);
 * 4. reclaims idle entries up to the free handler slots with `XAUTOCLAIM` (cursor kept between
 *    ticks); ids in its deleted list are acknowledged and reported lost; claimed entries over the
 *    limit are dead-lettered, the others run with their delivery count.
 */
export class GroupReclaimer {
  private busy?: Promise<void>;
  private cursor = '0-0';

  constructor(private readonly c: GroupConsumer) {}

  /** Runs one tick unless the previous one is still running. */
  tick(): Promise<void> {
    if (!this.busy) {
      this.busy = this.run()
        .catch((err: unknown) => this.c.log.warn(`group ${this.c.name}: maintenance failed (${errorText(err)})`))
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
   * group alone was destroyed), else from the log's start (the log is new). Returns the start id.
   */
  async recover(lastSeen: string | undefined): Promise<string> {
    const { k, o } = this.c;
    const first = (await cmd(this.c.conn.client, 'XRANGE', [k.log, '-', '+', 'COUNT', 1])) as [string, unknown][];
    const head = first.length > 0 ? String(first[0][0]) : undefined;
    let start = '0';
    if (head !== undefined && lastSeen !== undefined && compareStreamIds(head, lastSeen) <= 0) start = lastSeen;
    else if (head !== undefined && lastSeen === undefined) start = startId(o.from);
    await createGroup(this.c.conn.client, k, o.group, start);
    return start;
  }

  /** Delivery counts (XPENDING) of entries this member holds. */
  async countsOf(entries: readonly GroupEntry[]): Promise<Map<string, number>> {
    let lo = entries[0].streamId;
    let hi = lo;
    for (const e of entries) {
      if (compareStreamIds(e.streamId, lo) < 0) lo = e.streamId;
      if (compareStreamIds(e.streamId, hi) > 0) hi = e.streamId;
    }
    const rows = await pending(this.c.conn.client, this.c.k, this.c.o.group, { start: lo, end: hi, count: entries.length + this.c.running.size + 16, consumer: this.c.consumer });
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

  private async run(): Promise<void> {
    const c = this.c;
    const { k, o } = c;
    const client = c.conn.client;
    const ids = [...c.running.keys()];
    for (let i = 0; i < ids.length; i += 1000) {
      await cmd(client, 'XCLAIM', [k.log, o.group, c.consumer, 0, ...ids.slice(i, i + 1000), 'JUSTID']);
    }
    await c.flushAcks();
    if (c.isStopping) return;

    const idle = await pending(client, k, o.group, { idleMs: o.ackTimeoutMs, count: 100 });
    for (const r of idle) {
      if (r.deliveries >= o.maxDeliveries && !c.running.has(r.streamId)) await this.bury(r.streamId, o.ackTimeoutMs);
    }

    if (c.free <= 0 || c.isStopping) return;
    const got = await autoClaim(client, k, o.group, c.consumer, o.ackTimeoutMs, this.cursor, c.free);
    this.cursor = got.cursor;
    if (got.deleted.length > 0) {
      await cmd(client, 'XACK', [k.log, o.group, ...got.deleted]);
      const lost = got.deleted.map((s) => {
        try {
          return eventIdOf(s);
        } catch {
          return s;
        }
      });
      c.report('lost', lost, `${lost.length} pending entries were deleted from the log before they were handled: ${lost.join(', ')}`);
    }
    const live = got.entries.filter((e) => !c.running.has(e.streamId));
    if (live.length === 0) return;
    const counts = await this.countsOf(live);
    for (const e of live) {
      const n = counts.get(e.streamId);
      if (n === undefined) continue; // claimed away from us in between: its new owner runs it
      if (n > o.maxDeliveries && e.payload !== null) await this.bury(e.streamId, 0);
      else if (!c.isStopping) c.dispatch(e, n);
    }
  }
}
