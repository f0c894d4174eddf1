import { PROTOCOL_VERSION, eventIdOf, eventInstant, streamIdOf, topicKeys } from '../../src/protocol.js';
import { randomQueue } from '../helpers/valkey.js';
import { busFixture, collect, pastMs, serverMs } from './bus-core.helpers.js';

const f = busFixture();

const ids = (events: { id: string }[]): string[] => events.map((e) => e.id);

describe('publish', () => {
  it('returns evt ids in mint order that convert to the stream ids of the entries', async () => {
    const t = randomQueue('bus');
    const one = await f.bus.publish(t, { n: 0 });
    const many = await f.bus.publishMany(t, [{ n: 1 }, { n: 2 }, 'three', null, [4]]);
    const all = [one, ...many];
    for (const id of all) expect(id).toMatch(/^evt[0-9A-Za-z]{11}$/);
    expect([...all].sort()).toEqual(all);
    expect(new Set(all).size).toBe(all.length);
    const entries = await f.raw.xrange(topicKeys(t).log, '-', '+');
    expect(entries.map(([sid]) => eventIdOf(sid))).toEqual(all);
    expect(entries.map(([sid]) => sid)).toEqual(all.map(streamIdOf));
    expect(entries.map(([, f]) => f)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }, 'three', null, [4]].map((p) => ['p', JSON.stringify(p)]));
    // One call, one millisecond: the batch shares the ms and counts up the sequence.
    const ms = new Set(many.map(eventInstant));
    expect(ms.size).toBe(1);
    expect(many.map((id) => Number(streamIdOf(id).split('-')[1]))).toEqual([0, 1, 2, 3, 4].map((i) => i + Number(streamIdOf(many[0]).split('-')[1])));
    expect(await f.raw.hget(topicKeys(t).meta, 'v')).toBe(PROTOCOL_VERSION);
  });

  it('publishMany of 1000 is one call; an empty batch writes nothing', async () => {
    const t = randomQueue('bus');
    expect(await f.bus.publishMany(t, [])).toEqual([]);
    expect(await f.raw.exists(topicKeys(t).log, topicKeys(t).meta)).toBe(0);
    const got = await f.bus.publishMany(t, Array.from({ length: 1000 }, (_, i) => ({ i })));
    expect(got).toHaveLength(1000);
    expect(await f.raw.xlen(topicKeys(t).log)).toBe(1000);
  });
});

describe('replay', () => {
  let t: string;
  let all: string[];
  const payloads = Array.from({ length: 25 }, (_, i) => ({ i }));
  beforeAll(async () => {
    t = randomQueue('bus');
    all = [];
    // Five publishes in five distinct milliseconds, five events each.
    for (let b = 0; b < 5; b++) {
      const got = await f.bus.publishMany(t, payloads.slice(5 * b, 5 * b + 5));
      all.push(...got);
      await pastMs(f.raw, eventInstant(got[0]));
    }
  });

  it('replays everything in mint order and newest first, in any batch size', async () => {
    for (const batch of [1, 3, 7, 200]) {
      const asc = await collect(f.bus.replay(t, { batch }));
      expect(ids(asc)).toEqual(all);
      expect(asc.map((e) => e.payload)).toEqual(payloads);
      expect(asc.every((e) => e.topic === t && e.at.getTime() === eventInstant(e.id))).toBe(true);
      expect(ids(await collect(f.bus.replay(t, { batch, order: 'desc' })))).toEqual([...all].reverse());
    }
  });

  it('replays by id, both ends inclusive', async () => {
    expect(ids(await collect(f.bus.replay(t, { from: all[3], to: all[17] })))).toEqual(all.slice(3, 18));
    expect(ids(await collect(f.bus.replay(t, { from: all[3], to: all[17], order: 'desc', batch: 4 })))).toEqual(all.slice(3, 18).reverse());
    expect(ids(await collect(f.bus.replay(t, { from: all[24] })))).toEqual([all[24]]);
    expect(ids(await collect(f.bus.replay(t, { from: all[9], to: all[9] })))).toEqual([all[9]]);
  });

  it('replays by instant, exact to the millisecond of the mint', async () => {
    const msOf = (i: number) => new Date(eventInstant(all[i]));
    // Events 5..9 share one ms, 10..14 the next publish's ms.
    expect(ids(await collect(f.bus.replay(t, { from: msOf(7), to: msOf(12) })))).toEqual(all.slice(5, 15));
    expect(ids(await collect(f.bus.replay(t, { from: msOf(7), to: msOf(12), order: 'desc', batch: 2 })))).toEqual(all.slice(5, 15).reverse());
    // An instant one ms after a mint excludes that mint.
    expect(ids(await collect(f.bus.replay(t, { from: new Date(eventInstant(all[4]) + 1) })))).toEqual(all.slice(5));
    expect(ids(await collect(f.bus.replay(t, { to: new Date(eventInstant(all[5]) - 1) })))).toEqual(all.slice(0, 5));
    expect(ids(await collect(f.bus.replay(t, { to: msOf(0) })))).toEqual(all.slice(0, 5));
    // A mixed range: an instant and an id.
    expect(ids(await collect(f.bus.replay(t, { from: msOf(10), to: all[11] })))).toEqual(all.slice(10, 12));
  });

  it('stops at the instant replay started by default; a topic never published replays nothing', async () => {
    const now = await serverMs(f.raw);
    expect(ids(await collect(f.bus.replay(t, { to: new Date(now) })))).toEqual(all);
    expect(await collect(f.bus.replay(randomQueue('none')))).toEqual([]);
  });
});
