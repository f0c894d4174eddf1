/**
 * Stopping a group member while its read blocks: an event published in the same instant is either
 * handled by that member before it stops (its read was served, the reply awaited) or left new for
 * the next member — never delivered to a member that is gone and left in its pending list until a
 * reclaim (the ack timeout here is a minute, so a stranded entry fails the test).
 */
import type { Redis } from 'iovalkey';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { topicKeys } from '../../src/core/keys.js';
import { eventually, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';
import { append, pendingCount, startMember } from './bus-groups.helpers.js';

/** Calls of `CLIENT ID` the server has answered so far (INFO commandstats). */
async function clientIdCalls(raw: Redis): Promise<number> {
  const info = (await raw.call('INFO', 'commandstats')) as string;
  return Number(/cmdstat_client\|id:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

/** The server id of the client blocked in XREADGROUP on `topic`'s log, if one is. */
async function blockedReaderId(raw: Redis): Promise<string | undefined> {
  const list = (await raw.call('CLIENT', 'LIST')) as string;
  const line = list.split('\n').find((l) => / flags=\S*b/.test(l) && / cmd=xreadgroup/.test(l));
  return line ? /^id=(\d+)/.exec(line)?.[1] : undefined;
}

/** True once a client blocks in XREADGROUP (CLIENT LIST flag `b`). */
async function blockedReaders(raw: Redis): Promise<number> {
  const list = (await raw.call('CLIENT', 'LIST')) as string;
  return list.split('\n').filter((l) => / flags=\S*b/.test(l) && / cmd=xreadgroup/.test(l)).length;
}

describe('stopping a group member during a blocking read', () => {
  let raw: Redis;
  let conn: EchoMqConnection;

  beforeAll(async () => {
    raw = rawClient();
    conn = new EchoMqConnection({ url: testUrl() });
    await conn.open();
  });
  afterAll(async () => {
    await conn.close();
    await raw.quit();
  });

  it('an event published as the member stops is handled exactly once, by it or by the next member', async () => {
    const options = { group: 'g', ackTimeoutMs: 60_000, maxDeliveries: 3 };
    for (let round = 0; round < 15; round++) {
      const topic = randomQueue('stop');
      const before = await blockedReaders(raw);
      const a = await startMember(conn, { topic, options, blockMs: 10_000 });
      await eventually(async () => (await blockedReaders(raw)) > before, 5000, 'the member blocks');
      // Same instant: the entry lands while the read blocks, and the member is told to stop.
      const published = append(raw, topic, { round });
      await a.member.stop(2000);
      await published;
      const b = await startMember(conn, { topic, options, blockMs: 200 });
      await eventually(() => a.log.events.length + b.log.events.length === 1, 3000, 'the event handled');
      await eventually(async () => (await pendingCount(raw, topic, 'g')) === 0, 3000, 'nothing pending');
      await b.member.stop(500);
      expect(a.log.events.length + b.log.events.length).toBe(1);
      await raw.del(topicKeys(topic).log);
    }
  }, 120_000);

  it('learns its connection\'s server id once (one command per later read), and again after a reconnect', async () => {
    const options = { group: 'g', ackTimeoutMs: 60_000, maxDeliveries: 3 };
    const topic = randomQueue('ids');
    const before = await clientIdCalls(raw);
    const a = await startMember(conn, { topic, options, blockMs: 30 });
    let stopped = false;
    try {
      for (let i = 0; i < 20; i++) {
        await append(raw, topic, { i });
        await eventually(() => a.log.events.length === i + 1, 3000, `event ${i} handled`);
      }
      // Twenty events and many 30 ms reads on one connection: CLIENT ID went with the first only.
      expect(await clientIdCalls(raw)).toBe(before + 1);
      // The blocking connection dropped: the member reconnects, learns the new id, and still stops
      // by unblocking (not by a stale id naming another client, or none).
      let id: string | undefined;
      await eventually(async () => (id = await blockedReaderId(raw)) !== undefined, 3000, 'the member blocks');
      await raw.call('CLIENT', 'KILL', 'ID', id!);
      await append(raw, topic, { i: 20 });
      await eventually(() => a.log.events.length === 21, 5000, 'the event after the reconnect handled');
      expect(await clientIdCalls(raw)).toBe(before + 2);
      await a.member.stop(2000);
      stopped = true;
      expect(a.log.events.map((e) => (e.payload as { i: number }).i)).toEqual([...Array(21).keys()]);
    } finally {
      if (!stopped) await a.member.stop(500); // a failed expectation must not leave the member reading
      await raw.del(topicKeys(topic).log);
    }
  }, 30_000);
});
