import { RoundSizer } from '../../src/queue/consumer/round-sizer.js';

/** Drives a sizer through `epochs` epochs of 16 rounds over 50 ms, at the rate `rate(split)` jobs/ms. */
let t = 0;
const clock = (): number => t;

function drive(s: RoundSizer, epochs: number, rate: (split: number) => number, saturated = true): number[] {
  const seen: number[] = [];
  for (let e = 0; e < epochs; e++) {
    for (let r = 0; r < 16; r++) {
      t += 50 / 16;
      const share = s.share;
      s.record(share, saturated ? share : share - 1, rate(s.current) * (50 / 16));
    }
    seen.push(s.current);
  }
  return seen;
}

describe('RoundSizer (rounds in flight)', () => {
  it('a fixed split claims the capacity in that many shares, plus one completion round', () => {
    const s = new RoundSizer(20, 2);
    expect([s.current, s.share, s.maxRounds]).toEqual([2, 10, 3]);
    expect(new RoundSizer(2, 4).current).toBe(2); // never more shares than jobs
    expect(new RoundSizer(3000, 1).share).toBe(1000); // a claim asks for at most 1000
    expect(drive(new RoundSizer(20, 3, clock), 12, (x) => 10 - x).every((x) => x === 3)).toBe(true);
  });

  it('adaptive: starts with two shares and keeps a split only while it is measurably faster', () => {
    const s = new RoundSizer(20, 'adaptive', clock);
    expect(s.current).toBe(2);
    expect(new RoundSizer(6, 'adaptive', clock).current).toBe(1); // below 8: one share to start
    const faster = drive(s, 48, (x) => (x === 1 ? 20 : x === 2 ? 30 : 29));
    expect(faster[0]).toBe(3); // the second epoch probes a neighbour at once
    expect(faster.slice(-8).filter((x) => x === 2).length).toBeGreaterThanOrEqual(6); // settles on 2, probing now and then
    const flat = drive(new RoundSizer(20, 'adaptive', clock), 48, () => 20); // handlers are the bottleneck
    expect(flat.slice(-8).filter((x) => x === 1).length).toBeGreaterThanOrEqual(6);
  });

  it('adaptive: back to one share as soon as claims stop coming back full; never splits a capacity below 4', () => {
    const s = new RoundSizer(100, 'adaptive', clock);
    drive(s, 32, (x) => 10 * x);
    expect(s.current).toBeGreaterThan(1);
    expect(drive(s, 1, (x) => 10 * x, false)).toEqual([1]);
    expect(drive(s, 1, (x) => 10 * x)).toEqual([2]); // saturated again: starts over from two shares
    expect(drive(new RoundSizer(3, 'adaptive', clock), 16, (x) => 10 * x).every((x) => x === 1)).toBe(true);
  });
});
