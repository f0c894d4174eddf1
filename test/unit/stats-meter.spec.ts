import { metricsPlan } from '../../src/admin/queue-metrics.js';
import { EchoMqError } from '../../src/core/errors.js';
import { IdMinter, parseId } from '../../src/core/ids.js';
import { LATENCY_BOUNDS_MS, LATENCY_BUCKETS, STATS_FIELDS, latencyBucket } from '../../src/core/wire/index.js';
import { mintedAt } from '../../src/queue/consumer/stats-meter.js';

// Issue 38: the pieces of the stored metrics that need no Valkey.
describe('stored metrics, without Valkey', () => {
  it('mintedAt reads the mint instant of an id in plain doubles, exactly as parseId does', () => {
    let now = Date.UTC(2026, 11, 7, 17, 0);
    const minter = new IdMinter(1023, () => now);
    for (let i = 0; i < 2000; i++) {
      now += 1 + ((i * 7919) % 100_000_000); // instants spread over years
      const id = minter.next('job');
      expect([id, mintedAt(id)]).toEqual([id, parseId(id).ms]);
    }
    expect(mintedAt('job!!!!!!!!!!!')).toBeNaN();
  });

  it('latencyBucket puts a value in the first bucket whose bound is not below it; above 10 min the last', () => {
    expect(LATENCY_BUCKETS).toBe(19);
    expect(STATS_FIELDS).toHaveLength(5 + 2 * 19);
    expect([0, 1, 1.5, 2, 3, 999, 1000, 1001, 600_000, 600_001, 1e12].map(latencyBucket)).toEqual([0, 0, 1, 1, 2, 9, 9, 10, 17, 18, 18]);
    for (let i = 0; i < LATENCY_BOUNDS_MS.length; i++) expect(latencyBucket(LATENCY_BOUNDS_MS[i])).toBe(i);
  });

  it('metricsPlan aligns a range to whole steps, picks minute or hour hashes, and refuses bad ranges typed', () => {
    const now = Date.UTC(2026, 11, 7, 17, 30, 15);
    const p = metricsPlan({}, now);
    expect([p.resolution, p.step, p.points, p.to - p.from, p.units.length]).toEqual(['minute', 60_000, 61, 61 * 60_000, 61]);
    const q = metricsPlan({ from: now - 6 * 3_600_000, to: now, step: 300_000 }, now);
    expect([q.resolution, q.points, q.units.length, q.slot[0], q.slot[5], q.slot[q.slot.length - 1]]).toEqual(['minute', 73, 365, 0, 1, 72]);
    const h = metricsPlan({ from: now - 7 * 86_400_000, to: now, step: 21_600_000 }, now);
    expect([h.resolution, h.units.length, h.points]).toEqual(['hour', 7 * 24 + 6, 29]);
    const refused = (o: object): string => {
      try {
        metricsPlan(o, now);
        return 'accepted';
      } catch (e) {
        return e instanceof EchoMqError ? e.code : String(e);
      }
    };
    for (const o of [{ step: 30_000 }, { step: 61_000 }, { from: now, to: now }, { from: now - 25 * 3_600_000, to: now }, { step: 3_600_000, from: now - 16 * 86_400_000, to: now }, { to: -1 }, { from: 1.5 }, { step: '60000' }, { since: 1 }]) {
      expect([o, refused(o)]).toEqual([o, 'EMQ_BAD_OPTION']);
    }
  });
});
