import { BusService } from '../../src/index.js';
import { eventIdOf, eventInstant, streamIdOf, topicKeys } from '../../src/protocol.js';
import { eventually, randomQueue } from '../helpers/valkey.js';
import { busFixture, collect, pastMs } from './bus-core.helpers.js';

const f = busFixture();

const ids = (events: { id: string }[]): string[] => events.map((e) => e.id);

/** Publishes `batches` batches of `size`, each in its own millisecond; returns all ids. */
async function fill(t: string, batches: number, size: number): Promise<string[]> {
  const all: string[] = [];
  for (let b = 0; b < batches; b++) {
    const got = await f.bus.publishMany(t, Array.from({ length: size }, (_, i) => ({ b, i })));
    all.push(...got);
    await pastMs(f.raw, eventInstant(got[0]));
  }
  return all;
}

/** Every asc/desc replay of [from, to] in several batch sizes equals `want`. */
async function expectReplay(t: string, want: string[], range: { from?: string | Date; to?: string | Date } = {}, batches = [1, 4, 9, 1000]): Promise<void> {
  for (const batch of batches) {
    expect(ids(await collect(f.bus.replay(t, { ...range, batch })))).toEqual(want);
    expect(ids(await collect(f.bus.replay(t, { ...range, batch, order: 'desc' })))).toEqual([...want].reverse());
  }
}

describe('retention by length', () => {
  it('archives the oldest entries into a segment, cuts the log exactly, replays across both', async () => {
    const t = randomQueue('ret');
    const k = topicKeys(t);
    const all = await fill(t, 6, 5);
    await f.bus.setRetention(t, { maxLen: 12 });
    expect(await f.bus.getRetention(t)).toEqual({ maxLen: 12, archiveMaxAgeMs: 604_800_000, archiveMaxBytes: 67_108_864 }); // the default archive bounds
    expect(await f.bus.trim(t)).toEqual({ archived: 18, trimmed: 18, expiredSegments: 0 });
    expect((await f.raw.xrange(k.log, '-', '+')).map(([sid]) => eventIdOf(sid))).toEqual(all.slice(18));
    const member = `${all[0]}-${all[17]}`;
    expect(await f.raw.zrange(k.archive, 0, -1, 'WITHSCORES')).toEqual([member, String(eventInstant(all[0]))]);
    const seg = JSON.parse((await f.raw.get(k.segPrefix + member))!) as [string, string][];
    expect(seg.map(([sid]) => sid)).toEqual(all.slice(0, 18).map(streamIdOf));
    expect(seg.map(([, p]) => JSON.parse(p))).toEqual(Array.from({ length: 18 }, (_, n) => ({ b: Math.floor(n / 5), i: n % 5 })));
    // Nothing more is due.
    expect(await f.bus.trim(t)).toEqual({ archived: 0, trimmed: 0, expiredSegments: 0 });

    await expectReplay(t, all);
    // From an instant before the live log's start: read from the archive, then the log.
    await expectReplay(t, all.slice(5), { from: new Date(eventInstant(all[7])) });
    await expectReplay(t, all.slice(3, 22), { from: all[3], to: all[21] });
    await expectReplay(t, all.slice(3, 10), { from: all[3], to: new Date(eventInstant(all[9])) });
    await expectReplay(t, all.slice(18, 20), { from: all[18], to: all[19] });
    await expectReplay(t, all.slice(17, 19), { from: all[17], to: all[18] });
  });

  it('trims more than 1000 entries in several calls (one segment each), replay has no gaps or duplicates', async () => {
    const t = randomQueue('ret');
    const all = await fill(t, 5, 500);
    await f.bus.setRetention(t, { maxLen: 100 });
    expect(await f.bus.trim(t)).toEqual({ archived: 2400, trimmed: 2400, expiredSegments: 0 });
    expect(await f.raw.zcard(topicKeys(t).archive)).toBe(3);
    expect(await f.raw.xlen(topicKeys(t).log)).toBe(100);
    await expectReplay(t, all, {}, [7, 1000]);
    await expectReplay(t, all.slice(999, 2401), { from: all[999], to: all[2400] }, [13, 200]);
  });

  it('a replay running while trims move its next entries into the archive misses nothing', async () => {
    const t = randomQueue('ret');
    const all = await fill(t, 4, 250);
    await f.bus.setRetention(t, { maxLen: 10 });
    for (const order of ['asc', 'desc'] as const) {
      const got: string[] = [];
      let n = 0;
      for await (const e of f.bus.replay(t, { batch: 50, order })) {
        got.push(e.id);
        if (++n === 60) {
          await f.bus.publishMany(t, [{ late: 1 }]);
          await f.bus.trim(t);
        }
      }
      const want = order === 'asc' ? all : [...all].reverse();
      expect(got).toEqual(want);
      all.push(...ids(await collect(f.bus.replay(t, { from: all[all.length - 1] }))).slice(1));
    }
  });
});

describe('retention by age and the archive age', () => {
  it('archives entries older than maxAgeMs; expires segments older than archiveMaxAgeMs', async () => {
    const t = randomQueue('ret');
    const k = topicKeys(t);
    const old = await fill(t, 2, 3);
    await new Promise((r) => setTimeout(r, 150));
    const young = await fill(t, 1, 3);
    await f.bus.setRetention(t, { maxAgeMs: 100 });
    expect(await f.bus.trim(t)).toEqual({ archived: 6, trimmed: 6, expiredSegments: 0 });
    expect((await f.raw.xrange(k.log, '-', '+')).map(([sid]) => eventIdOf(sid))).toEqual(young);
    await expectReplay(t, [...old, ...young]);
    await expectReplay(t, [...old.slice(3), ...young], { from: new Date(eventInstant(old[3])) });

    await f.bus.setRetention(t, { maxAgeMs: 100, archiveMaxAgeMs: 120 });
    await new Promise((r) => setTimeout(r, 150));
    expect(await f.bus.trim(t)).toEqual({ archived: 3, trimmed: 3, expiredSegments: 1 });
    expect(await f.raw.zrange(k.archive, 0, -1)).toEqual([`${young[0]}-${young[2]}`]);
    expect(await f.raw.exists(k.segPrefix + `${old[0]}-${old[5]}`)).toBe(0);
    await expectReplay(t, young);
  });
});

describe('consumer groups bound the cut', () => {
  it('a lagging group keeps its unacknowledged and undelivered entries', async () => {
    const t = randomQueue('ret');
    const k = topicKeys(t);
    const all = await fill(t, 4, 5);
    await f.raw.xgroup('CREATE', k.log, 'slow', '0');
    await f.raw.xgroup('CREATE', k.log, 'fast', '0');
    const read = async (group: string, count: number) =>
      ((await f.raw.xreadgroup('GROUP', group, 'c1', 'COUNT', count, 'STREAMS', k.log, '>')) as [string, [string, string[]][]][])[0][1].map(([sid]) => sid);
    await f.bus.setRetention(t, { maxLen: 2, maxAgeMs: 1 });
    // Neither group has read anything: nothing may go.
    expect(await f.bus.trim(t)).toEqual({ archived: 0, trimmed: 0, expiredSegments: 0 });
    // slow reads 8 and acks the first 3; fast reads and acks everything.
    const slowRead = await read('slow', 8);
    await f.raw.xack(k.log, 'slow', ...slowRead.slice(0, 3));
    await f.raw.xack(k.log, 'fast', ...(await read('fast', 100)));
    expect(await f.bus.trim(t)).toEqual({ archived: 3, trimmed: 3, expiredSegments: 0 });
    expect((await f.raw.xrange(k.log, '-', '+')).map(([sid]) => eventIdOf(sid))).toEqual(all.slice(3));
    // Its pending entries still have their bodies.
    const mine = (await f.raw.xreadgroup('GROUP', 'slow', 'c1', 'STREAMS', k.log, '0')) as [string, [string, string[] | null][]][];
    expect(mine[0][1].map(([sid, f]) => [eventIdOf(sid), f])).toEqual(all.slice(3, 8).map((id, i) => [id, ['p', JSON.stringify({ b: Math.floor((i + 3) / 5), i: (i + 3) % 5 })]]));
    // Acking all but one pending entry: the cut stops at it.
    await f.raw.xack(k.log, 'slow', ...slowRead.slice(3, 5), ...slowRead.slice(6));
    expect(await f.bus.trim(t)).toEqual({ archived: 2, trimmed: 2, expiredSegments: 0 });
    expect(eventIdOf((await f.raw.xrange(k.log, '-', '+', 'COUNT', 1))[0][0])).toBe(all[5]);
    // Everything acked but nothing more delivered: the undelivered entries stay.
    await f.raw.xack(k.log, 'slow', slowRead[5]);
    expect(await f.bus.trim(t)).toEqual({ archived: 3, trimmed: 3, expiredSegments: 0 });
    expect(eventIdOf((await f.raw.xrange(k.log, '-', '+', 'COUNT', 1))[0][0])).toBe(all[8]);
    await expectReplay(t, all);
  });
});

describe('automatic trims', () => {
  it('trims a topic it published to within the interval', async () => {
    const auto = new BusService(f.conn, { trimIntervalMs: 50 });
    try {
      const t = randomQueue('ret');
      await auto.setRetention(t, { maxLen: 5 });
      const all = await auto.publishMany(t, Array.from({ length: 40 }, (_, i) => i));
      await eventually(async () => (await f.raw.xlen(topicKeys(t).log)) === 5, 3000, 'the automatic trim');
      expect(ids(await collect(auto.replay(t)))).toEqual(all);
    } finally {
      await auto.close();
    }
  });
});
