import { Redis } from 'iovalkey';
import { randomBytes } from 'node:crypto';
import { topicKeys } from '@echomq/nestjs/protocol';
import { openRawMember, openRawPublisher, rawPayload } from '../bus-raw.js';
import { BENCH_GROUP } from '../bus.js';
import type { PhaseRecord } from '../format.js';
import { pairStat, withinRatios } from '../pairs.js';

function testUrl(): string {
  const url = process.env.ECHOMQ_TEST_URL;
  if (!url) throw new Error('ECHOMQ_TEST_URL is not set: run through `npm test -w bench` (with-valkey starts Valkey)');
  return url;
}

const rec = (rep: number, values: Record<string, number>, system: PhaseRecord['system'] = 'echomq'): PhaseRecord => ({ phase: 'bus group c50', system, rep, values });

describe('bench Bus anchors: the ratio against the raw loop measured in the same phase', () => {
  it('is the median of the per-repetition ratios, with their min–max', () => {
    const records = [
      rec(0, { bus_group_c50_per_s: 60, raw_group_c50_per_s: 100 }),
      rec(1, { bus_group_c50_per_s: 90, raw_group_c50_per_s: 100 }),
      rec(2, { bus_group_c50_per_s: 40, raw_group_c50_per_s: 200 }),
      rec(3, { bus_group_c50_per_s: 70 }), // no anchor in this run: no pair
      rec(0, { bus_group_c50_per_s: 1, raw_group_c50_per_s: 1 }, 'bullmq'), // another system's: not EchoMQ's
    ];
    const ratios = withinRatios(records, 'bus_group_c50_per_s', 'raw_group_c50_per_s');
    expect(ratios).toEqual([0.6, 0.9, 0.2]);
    expect(pairStat(ratios)).toEqual({ median: 0.6, min: 0.2, max: 0.9, pairs: 3 });
  });

  it('reads the payload of a raw entry from its p field', () => {
    expect(rawPayload(['tp', 'x', 'p', '{"i":1}'])).toEqual({ i: 1 });
    expect(rawPayload([])).toBeNull();
  });
});

describe('bench Bus anchors: the raw publisher and group loop on a real Valkey', () => {
  it('publishes to the topic log and the raw member handles and acknowledges every entry', async () => {
    const topic = `rawspec-${randomBytes(5).toString('hex')}`;
    const log = topicKeys(topic).log;
    const admin = new Redis(testUrl(), { maxRetriesPerRequest: 1 });
    const pub = openRawPublisher(testUrl());
    try {
      await pub.single(topic, 120);
      await pub.batch(topic, 2100);
      expect(await admin.xlen(log)).toBe(2220);
      for (const c of [1, 50]) {
        const seen: unknown[] = [];
        await admin.call('XGROUP', 'DESTROY', log, BENCH_GROUP);
        const member = openRawMember(testUrl(), topic, c, (p) => seen.push(p));
        await member.start();
        const until = Date.now() + 10_000;
        while (seen.length < 2220 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
        let pending = 1;
        while (pending > 0 && Date.now() < until) pending = Number(((await admin.call('XPENDING', log, BENCH_GROUP)) as unknown[])[0]);
        await member.close();
        expect(seen.length).toBe(2220);
        expect(seen[0]).toEqual(expect.objectContaining({ i: 0 }));
        expect(pending).toBe(0);
      }
    } finally {
      await pub.close();
      await admin.del(log);
      await admin.quit();
    }
  });
});
