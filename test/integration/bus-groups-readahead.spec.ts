/**
 * Consumer-group read-ahead (`prefetch`, issue 41 item 2): a member reads up to
 * `concurrency + prefetch` entries per XREADGROUP, runs them in order `concurrency` at a time,
 * acknowledges each after its handler, and never loses or acknowledges unhandled the entries it
 * read ahead when it stops or dies.
 */
import type { Redis } from 'iovalkey';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { eventIdOf } from '../../src/core/event-id.js';
import { topicKeys } from '../../src/core/keys.js';
import { GroupConsumer } from '../../src/bus/consumer-group/group-consumer.js';
import { OnEvent } from '../../src/nest/on-event-decorator.js';
import { killChildren, spawnFixture } from '../helpers/child.js';
import { eventually, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';
import { append, pendingCount, startMember } from './bus-groups.helpers.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** XPENDING rows of one consumer: [stream id, consumer, idle ms, deliveries]. */
async function pendingOf(raw: Redis, topic: string, group: string, consumer: string): Promise<[string, string, number, number][]> {
  return (await raw.call('XPENDING', topicKeys(topic).log, group, '-', '+', 1000, consumer)) as [string, string, number, number][];
}

async function xackCalls(raw: Redis): Promise<number> {
  const info = await raw.info('commandstats');
  const m = /cmdstat_xack:calls=(\d+)/.exec(info);
  return m ? Number(m[1]) : 0;
}

describe('consumer-group read-ahead (prefetch)', () => {
  let conn: EchoMqConnection;
  let raw: Redis;

  beforeAll(async () => {
    conn = new EchoMqConnection({ url: testUrl() });
    await conn.open();
    raw = rawClient();
  });
  afterEach(async () => {
    await killChildren();
  });
  afterAll(async () => {
    await conn.close();
    await raw.quit();
  });

  it('at c1 with prefetch 10: entries run in log order, each still pending during its handler and acknowledged once after it, in batched XACKs', async () => {
    const topic = randomQueue('ra-order');
    const sids: string[] = [];
    for (let i = 0; i < 40; i++) sids.push(await append(raw, topic, { n: i }));
    const acksBefore = await xackCalls(raw);
    let maxHeld = 0;
    const pendingInHandler: boolean[] = [];
    const m = await startMember(conn, {
      topic,
      consumer: 'ra-1',
      options: { group: 'g', concurrency: 1, prefetch: 10 },
      body: async (e) => {
        const rows = await pendingOf(raw, topic, 'g', 'ra-1');
        maxHeld = Math.max(maxHeld, rows.length);
        pendingInHandler.push(rows.some(([sid]) => eventIdOf(sid) === e.id));
      },
    });
    try {
      await eventually(() => m.log.events.length === 40, 10_000, 'every event handled');
      await eventually(async () => (await pendingCount(raw, topic, 'g')) === 0, 10_000, 'nothing pending');
      expect(m.log.events.map((e) => e.id)).toEqual(sids.map(eventIdOf));
      expect(m.log.events.every((e) => e.deliveries === 1)).toBe(true);
      expect(pendingInHandler.every(Boolean)).toBe(true);
      // It read ahead (more than one entry held), never beyond concurrency + prefetch.
      expect(maxHeld).toBeGreaterThan(1);
      expect(maxHeld).toBeLessThanOrEqual(11);
      // About two XACKs per batch of 10 (the batch's, riding on the next read, and the last
      // entry's), not one per entry.
      await sleep(100);
      expect((await xackCalls(raw)) - acksBefore).toBeLessThanOrEqual(14);
      expect(m.log.losses).toEqual([]);
    } finally {
      await m.member.stop(1000);
    }
  });

  it('a member stopped mid-batch acknowledges only what it handled and releases its read-ahead entries; another member runs them, nothing lost or run twice', async () => {
    const topic = randomQueue('ra-stop');
    const sids: string[] = [];
    for (let i = 0; i < 30; i++) sids.push(await append(raw, topic, { n: i }));
    const a = await startMember(conn, { topic, consumer: 'ra-a', options: { group: 'g', concurrency: 1, prefetch: 20, ackTimeoutMs: 1000 }, body: () => sleep(30) });
    await eventually(() => a.log.events.length >= 3, 10_000, 'the first member busy');
    await a.member.stop(5000);
    const handledByA = a.log.events.map((e) => e.id);
    const left = await pendingOf(raw, topic, 'g', 'ra-a');
    // What is still pending under the stopped member is exactly what it did not handle, made
    // reclaimable at once (idle past the ack timeout, its unhandled delivery taken back).
    expect(left.length).toBeGreaterThan(0);
    expect(left.map(([sid]) => eventIdOf(sid)).filter((id) => handledByA.includes(id))).toEqual([]);
    for (const [, , idle, deliveries] of left) {
      expect(idle).toBeGreaterThanOrEqual(1000);
      expect(deliveries).toBe(0);
    }

    const b = await startMember(conn, { topic, consumer: 'ra-b', options: { group: 'g', concurrency: 1, prefetch: 20, ackTimeoutMs: 1000 } });
    try {
      await eventually(() => a.log.events.length + b.log.events.length === 30, 15_000, 'every event handled');
      await eventually(async () => (await pendingCount(raw, topic, 'g')) === 0, 10_000, 'nothing pending');
      const all = [...handledByA, ...b.log.events.map((e) => e.id)];
      expect(all.sort()).toEqual(sids.map(eventIdOf).sort());
      // The released entries were delivered to the second member as first deliveries.
      const released = new Set(left.map(([sid]) => eventIdOf(sid)));
      for (const e of b.log.events) if (released.has(e.id)) expect(e.deliveries).toBe(1);
      expect([...a.log.losses, ...b.log.losses]).toEqual([]);
    } finally {
      await b.member.stop(1000);
    }
  });

  it('a member SIGKILLed mid-batch: its read-ahead entries stay pending and another member runs them after the ack timeout; nothing lost', async () => {
    const topic = randomQueue('ra-kill');
    const sids: string[] = [];
    for (let i = 0; i < 60; i++) sids.push(await append(raw, topic, { n: i }));
    const kid = spawnFixture('group-child', [testUrl(), topic, 'g', '1000', 'ra-kid', 'work', JSON.stringify({ concurrency: 1, prefetch: 20, workMs: 20, blockMs: 300 })]);
    await kid.waitForLine(/^READY (\S+)$/);
    const done = () => kid.lines.flatMap((l) => /^DONE (\S+) \d+$/.exec(l)?.[1] ?? []);
    await eventually(() => done().length >= 5, 15_000, 'the child busy');
    kid.signal('SIGKILL');
    expect(await kid.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const inFlight = (await pendingOf(raw, topic, 'g', 'ra-kid')).map(([sid]) => eventIdOf(sid));
    // It held read-ahead entries (more than the one running), at most concurrency + prefetch.
    expect(inFlight.length).toBeGreaterThan(1);
    expect(inFlight.length).toBeLessThanOrEqual(21);

    const b = await startMember(conn, { topic, consumer: 'ra-b', options: { group: 'g', concurrency: 1, prefetch: 20, ackTimeoutMs: 1000 } });
    try {
      const byKid = done();
      await eventually(() => new Set([...byKid, ...b.log.events.map((e) => e.id)]).size === 60, 20_000, 'every event handled');
      await eventually(async () => (await pendingCount(raw, topic, 'g')) === 0, 10_000, 'nothing pending');
      // Run twice only: an entry the killed member completed whose ack had not left.
      const twice = b.log.events.map((e) => e.id).filter((id) => byKid.includes(id));
      expect(twice.filter((id) => !inFlight.includes(id))).toEqual([]);
      // Every entry the killed member held and had not completed ran on the second member.
      const ranByB = new Set(b.log.events.map((e) => e.id));
      expect(inFlight.filter((id) => !byKid.includes(id) && !ranByB.has(id))).toEqual([]);
    } finally {
      await b.member.stop(1000);
    }
  });

  it('refuses a bad prefetch with EMQ_BAD_OPTION (member and @OnEvent) and writes nothing', async () => {
    const topic = randomQueue('ra-bad');
    const handler = async (): Promise<void> => undefined;
    for (const prefetch of [-1, 1001, 1.5, '5', null, Number.NaN]) {
      const options = { group: 'g', prefetch } as never;
      expect(() => new GroupConsumer(conn, { topic, handler, options })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('prefetch must be an integer in 0..1000') }));
      expect(() => OnEvent(topic, options)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    }
    expect(() => OnEvent(topic, { group: 'g', readAhead: 5 } as never)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: 'unknown group options: readAhead' }));
    for (const prefetch of [0, 1000]) expect(() => new GroupConsumer(conn, { topic, handler, options: { group: 'g', prefetch } })).not.toThrow();
    expect(await raw.exists(topicKeys(topic).log)).toBe(0);
  });
});
