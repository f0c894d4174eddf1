import type { Redis } from 'iovalkey';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { topicKeys } from '../../src/core/keys.js';
import { eventIdOf } from '../../src/core/event-id.js';
import type { GroupConsumer } from '../../src/bus/consumer-group/group-consumer.js';
import { processLosses$, type GroupLoss } from '../../src/bus/consumer-group/losses.js';
import { GroupConsumer as Member } from '../../src/bus/consumer-group/group-consumer.js';
import { deadLetter } from '../../src/bus/consumer-group/group-wire.js';
import { killChildren, spawnFixture } from '../helpers/child.js';
import { eventually, openConnection, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';
import { append, deadLetters, pendingCount, startMember } from './bus-groups.helpers.js';

describe('consumer groups on the bus log', () => {
  let conn: EchoMqConnection;
  let raw: Redis;
  const members: GroupConsumer[] = [];

  beforeAll(async () => {
    conn = await openConnection();
    raw = rawClient();
  });
  afterEach(async () => {
    await killChildren();
    await Promise.all(members.splice(0).map((m) => m.stop(500)));
  });
  afterAll(async () => {
    await conn.close();
    await raw.quit();
  });

  it('re-delivers the entry of a member killed mid-handler to another member after the ack timeout', async () => {
    const topic = randomQueue('crash');
    const child = spawnFixture('group-child', [testUrl(), topic, 'g', '800', 'doomed-1', 'hang']);
    await child.waitForLine(/^READY /);
    const sid = await append(raw, topic, { n: 1 });
    const [, startedId, firstDeliveries] = await child.waitForLine(/^STARTED (\S+) (\d+)$/);
    expect(startedId).toBe(eventIdOf(sid));
    expect(firstDeliveries).toBe('1');
    child.signal('SIGKILL');
    expect(await child.exited).toEqual({ code: null, signal: 'SIGKILL' });

    const { member, log } = await startMember(conn, { topic, consumer: 'survivor-1', options: { group: 'g', ackTimeoutMs: 800 } });
    members.push(member);
    const next = await append(raw, topic, { n: 2 });
    await eventually(() => log.events.length === 2, 20_000, 'both events handled');
    await eventually(async () => (await pendingCount(raw, topic, 'g')) === 0, 10_000, 'nothing pending');

    const byId = new Map(log.events.map((e) => [e.id, e]));
    expect(log.events.filter((e) => e.id === eventIdOf(sid))).toHaveLength(1);
    expect(byId.get(eventIdOf(sid))).toMatchObject({ topic, payload: { n: 1 } });
    expect(byId.get(eventIdOf(sid))!.deliveries).toBeGreaterThanOrEqual(2);
    expect(byId.get(eventIdOf(next))).toMatchObject({ payload: { n: 2 }, deliveries: 1 });
    expect(log.losses).toEqual([]);
  });

  it('dead-letters a poison event after maxDeliveries with its error and count, and moves on', async () => {
    const topic = randomQueue('poison');
    const { member, log } = await startMember(conn, {
      topic,
      consumer: 'm-1',
      options: { group: 'g', ackTimeoutMs: 500, maxDeliveries: 3 },
      body: (e) => {
        if ((e.payload as { poison?: boolean }).poison) throw new Error(`poison ${e.deliveries}`);
      },
    });
    members.push(member);
    const bad = await append(raw, topic, { poison: true });
    const good = [await append(raw, topic, { n: 1 }), await append(raw, topic, { n: 2 })];

    await eventually(async () => (await deadLetters(raw, topic)).length === 1, 20_000, 'the dead letter');
    const [dead] = await deadLetters(raw, topic);
    expect(dead).toMatchObject({ id: eventIdOf(bad), group: 'g', consumer: 'm-1', deliveries: '3', error: 'Error: poison 3', p: '{"poison":true}' });
    expect(Number(dead.at)).toBeGreaterThan(0);
    expect(log.events.filter((e) => e.id === eventIdOf(bad)).map((e) => e.deliveries)).toEqual([1, 2, 3]);

    const after = await append(raw, topic, { n: 3 });
    await eventually(() => log.events.some((e) => e.id === eventIdOf(after)), 10_000, 'the next event');
    for (const s of good) expect(log.events.filter((e) => e.id === eventIdOf(s))).toHaveLength(1);
    await eventually(async () => (await pendingCount(raw, topic, 'g')) === 0, 10_000, 'nothing pending');
    expect(log.losses.map((l) => [l.kind, l.ids])).toEqual([['dead-lettered', [eventIdOf(bad)]]]);
  });

  it('re-reads its own pending entries first when restarted under the same consumer name', async () => {
    const topic = randomQueue('restart');
    const first = await startMember(conn, {
      topic,
      consumer: 'same-1',
      options: { group: 'g', ackTimeoutMs: 60_000 },
      body: (e) =>
        new Promise<void>((_, reject) => e.signal.addEventListener('abort', () => reject(new Error('aborted')))),
    });
    const a = await append(raw, topic, { n: 'a' });
    await eventually(() => first.log.events.length === 1, 5000, 'first delivery');
    await first.member.stop(50);
    expect(await pendingCount(raw, topic, 'g')).toBe(1);
    const b = await append(raw, topic, { n: 'b' });

    const again = await startMember(conn, { topic, consumer: 'same-1', options: { group: 'g', ackTimeoutMs: 60_000 } });
    members.push(again.member);
    await eventually(() => again.log.events.length === 2, 10_000, 'both events');
    expect(again.log.events.map((e) => [e.id, e.deliveries])).toEqual([
      [eventIdOf(a), 2],
      [eventIdOf(b), 1],
    ]);
    await eventually(async () => (await pendingCount(raw, topic, 'g')) === 0, 5000, 'nothing pending');
  });

  it('recovers when the log is deleted under it, and reports the loss', async () => {
    const topic = randomQueue('del');
    const seen: GroupLoss[] = [];
    const sub = processLosses$.subscribe((l) => {
      if (l.topic === topic) seen.push(l);
    });
    try {
      const { member, log } = await startMember(conn, { topic, consumer: 'm-1', options: { group: 'g', ackTimeoutMs: 1000 } });
      members.push(member);
      await append(raw, topic, { n: 1 });
      await eventually(() => log.events.length === 1, 5000, 'first event');
      await raw.del(topicKeys(topic).log);
      await eventually(() => log.losses.some((l) => l.kind === 'group-recreated'), 10_000, 'the loss report');
      const after = await append(raw, topic, { n: 2 });
      await eventually(() => log.events.some((e) => e.id === eventIdOf(after)), 10_000, 'an event after the delete');
      expect(seen.map((l) => l.kind)).toContain('group-recreated');
    } finally {
      sub.unsubscribe();
    }
  });

  it('reports how many entries a deleted log took with it, and which', async () => {
    const topic = randomQueue('delcount');
    const { member, log } = await startMember(conn, {
      topic,
      consumer: 'm-1',
      options: { group: 'g', ackTimeoutMs: 300 },
      body: (e) => new Promise<void>((_, reject) => e.signal.addEventListener('abort', () => reject(new Error('aborted')))),
    });
    members.push(member);
    const sids: string[] = [];
    for (let i = 0; i < 5; i++) sids.push(await append(raw, topic, { n: i }));
    await eventually(() => log.events.length === 1, 5000, 'the first delivery');
    await new Promise((r) => setTimeout(r, 400)); // a few ticks: the member has looked at its group
    await raw.del(topicKeys(topic).log);
    await eventually(() => log.losses.some((l) => l.kind === 'group-recreated'), 10_000, 'the loss report');
    const loss = log.losses.find((l) => l.kind === 'group-recreated')!;
    // One delivered and pending (its handler still running), four never delivered.
    expect({ count: loss.count, first: loss.first, last: loss.last }).toEqual({ count: 5, first: eventIdOf(sids[0]), last: eventIdOf(sids[4]) });
    expect(loss.detail).toContain(`5 entries not yet handled are lost (${eventIdOf(sids[0])} .. ${eventIdOf(sids[4])}): 1 pending, 4 not yet delivered`);
  });

  it('acknowledges and reports entries deleted while pending, never handing them over', async () => {
    const topic = randomQueue('gone');
    const log = topicKeys(topic).log;
    await raw.call('XGROUP', 'CREATE', log, 'g', '0', 'MKSTREAM');
    const gone = await append(raw, topic, { n: 'gone' });
    const kept = await append(raw, topic, { n: 'kept' });
    await raw.call('XREADGROUP', 'GROUP', 'g', 'ghost', 'COUNT', '10', 'STREAMS', log, '>');
    await raw.xdel(log, gone);
    const m = await startMember(conn, { topic, consumer: 'm-1', options: { group: 'g', ackTimeoutMs: 300 } });
    members.push(m.member);
    await eventually(() => m.log.events.length === 1 && m.log.losses.length === 1, 10_000, 'the reclaim');
    expect(m.log.events.map((e) => e.id)).toEqual([eventIdOf(kept)]);
    expect(m.log.losses[0]).toMatchObject({ kind: 'lost', ids: [eventIdOf(gone)], group: 'g' });
    await eventually(async () => (await pendingCount(raw, topic, 'g')) === 0, 5000, 'nothing pending');
  });

  it('refuses bad input with typed errors and writes nothing', async () => {
    const topic = randomQueue('bad');
    const handler = async (): Promise<void> => undefined;
    const make = (t: string, extra: object) => () => new Member(conn, { topic: t, handler, options: { group: 'g' }, ...extra });
    expect(make('a b', {})).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    expect(make(topic, { options: { group: 'g}' } })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    expect(make(topic, { instance: 'x y' })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    expect(make(topic, { consumer: 'c\r\n' })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    expect(make(topic, { options: { group: 'g', ackTimeoutMs: 0 } })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(make(topic, { options: { group: 'g', nope: 1 } })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: 'unknown group options: nope' }));
    expect(make(topic, { deadCap: 0 })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));

    // The script refuses malformed arguments before its first write.
    const k = topicKeys(topic);
    await raw.call('XGROUP', 'CREATE', k.log, 'g', '0', 'MKSTREAM');
    const sid = await append(raw, topic, { n: 1 });
    await raw.call('XREADGROUP', 'GROUP', 'g', 'c', 'STREAMS', k.log, '>');
    const ok = { group: 'g', consumer: 'c', streamId: sid, eventId: eventIdOf(sid), error: 'e', minIdleMs: 0, deadCap: 10 };
    const cases: [object, string][] = [
      [{ group: 'g x' }, 'EMQ_BAD_NAME'],
      [{ consumer: '' }, 'EMQ_BAD_NAME'],
      [{ streamId: '1-x' }, 'EMQ_BAD_ARG'],
      [{ eventId: 'job00000000001' }, 'EMQ_BAD_ID'],
      [{ eventId: 'evtzzzzzzzzzzz' }, 'EMQ_BAD_ID'],
      [{ error: 'x'.repeat(65537) }, 'EMQ_BAD_ARG'],
      [{ minIdleMs: -1 }, 'EMQ_BAD_ARG'],
      [{ deadCap: 0 }, 'EMQ_BAD_ARG'],
    ];
    for (const [over, code] of cases) {
      await expect(deadLetter(conn.scriptClient, k, { ...ok, ...over })).rejects.toMatchObject({ code });
    }
    await expect(deadLetter(conn.scriptClient, topicKeys(randomQueue('other')), ok)).rejects.toThrow(/NOGROUP/);
    expect(await raw.exists(k.dead)).toBe(0);
    expect(await pendingCount(raw, topic, 'g')).toBe(1);
    // A valid call moves it; a second call finds nothing pending and writes nothing more.
    expect(await deadLetter(conn.scriptClient, k, ok)).toEqual({ status: 1, deliveries: 1 });
    expect(await deadLetter(conn.scriptClient, k, ok)).toEqual({ status: 0, deliveries: 0 });
    expect(await deadLetters(raw, topic)).toHaveLength(1);
    expect(await pendingCount(raw, topic, 'g')).toBe(0);
  });
});
