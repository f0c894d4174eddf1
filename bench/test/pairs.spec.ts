import { median, pairStat, pairText, summarize } from '../pairs.js';
import { phaseLoad, NOISY_OTHER_CORES } from '../load.js';
import type { PhaseRecord } from '../format.js';
import type { PhaseCost } from '../probe.js';

const cost = (noisy: boolean): PhaseCost => ({
  seconds: 1,
  wallUsPerJob: 1,
  clientUsPerJob: 1,
  serverUsPerJob: 1,
  scriptsPerJob: 1,
  scriptUsPerJob: 1,
  commandsPerJob: 1,
  blockingPerJob: 0,
  load: { otherCores: noisy ? 0.5 : 0, loadAvg1: 1, noisy },
});

const rec = (system: PhaseRecord['system'], rep: number, v: number, noisy = false): PhaseRecord => ({
  phase: 'process c50',
  system,
  rep,
  values: { process_c50_per_s: v },
  cost: cost(noisy),
});

describe('bench: per-pair ratios', () => {
  it('reports the median of the per-repetition ratios with their min–max, not the ratio of the medians', () => {
    const records = [rec('echomq', 0, 10), rec('bullmq', 0, 5), rec('echomq', 1, 20), rec('bullmq', 1, 5), rec('echomq', 2, 30, true), rec('bullmq', 2, 30)];
    const s = summarize(records);
    // Ratios per pair: 2, 4, 1. The medians alone would give 20 / 5 = 4.
    expect(s.pairs.process_c50_per_s?.bullmq).toEqual({ median: 2, min: 1, max: 4, pairs: 3 });
    expect(s.results.echomq.process_c50_per_s).toBe(20);
    expect(s.results.bullmq.process_c50_per_s).toBe(5);
    expect(s.pairs.process_c50_per_s?.beequeue).toBeUndefined();
    expect(s.noise.process_c50_per_s).toEqual({ noisy: 1, runs: 6 });
    expect(pairText(s.pairs.process_c50_per_s?.bullmq)).toBe('2.00× [1.00–4.00]');
  });

  it('a ceiling share is the median of the per-repetition shares of the ceiling measured beside each EchoMQ run', () => {
    const ceil = (jobsPerS: number, batch = 50) => ({ batch, jobsPerS, cost: cost(false) });
    const records = [
      { ...rec('echomq', 0, 30), ceiling: ceil(60) },
      rec('bullmq', 0, 6),
      { ...rec('echomq', 1, 40), ceiling: ceil(50) },
      rec('bullmq', 1, 10),
      { ...rec('echomq', 2, 45), ceiling: ceil(100, 100) },
    ];
    const share = summarize(records).shares.process_c50_per_s;
    // EchoMQ: 30/60, 40/50, 45/100; BullMQ only where it ran: 6/60, 10/50.
    expect(share?.bySystem.echomq).toEqual({ median: 0.5, min: 0.45, max: 0.8, pairs: 3 });
    expect(share?.bySystem.bullmq?.median).toBeCloseTo(0.15);
    expect(share?.bySystem.bullmq).toMatchObject({ min: 0.1, max: 0.2, pairs: 2 });
    expect(share?.bySystem.beequeue).toBeUndefined();
    expect(share?.ceilingPerS).toBe(60);
    expect(share?.batch).toBe(50);
    // Without a ceiling beside the runs there is no share.
    expect(summarize([rec('echomq', 0, 30)]).shares.process_c50_per_s).toBeUndefined();
  });

  it('pairs only runs of the same phase and repetition', () => {
    const s = summarize([rec('echomq', 0, 10), rec('bullmq', 1, 5), rec('beequeue', 0, 4)]);
    expect(s.pairs.process_c50_per_s?.bullmq).toBeUndefined();
    expect(s.pairs.process_c50_per_s?.beequeue).toEqual({ median: 2.5, min: 2.5, max: 2.5, pairs: 1 });
    expect(pairText(s.pairs.process_c50_per_s?.beequeue)).toBe('2.50×');
    expect(pairStat([])).toBeUndefined();
  });

  it('takes the mean of the two middle values for an even count (neither middle alone)', () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([0.9, 1.1])).toBeCloseTo(1.0, 10);
    expect(median([3, 1, 2])).toBe(2);
    expect(pairStat([1, 2, 3, 10])).toEqual({ median: 2.5, min: 1, max: 10, pairs: 4 });
  });
});

describe('bench: other processes’ CPU', () => {
  it('is the machine’s busy CPU minus this process, its children and Valkey, per wall second', () => {
    const a = { at: 0, machineBusyUs: 0, valkeyUs: 0, selfUs: 0 };
    const b = { at: 1000, machineBusyUs: 1_500_000, valkeyUs: 500_000, selfUs: 600_000 };
    const load = phaseLoad(a, b, 200_000);
    expect(load.machineCores).toBeCloseTo(1.5);
    expect(load.otherCores).toBeCloseTo(0.2);
    expect(load.noisy).toBe(0.2 > NOISY_OTHER_CORES);
    expect(phaseLoad(a, b, 400_000).noisy).toBe(false);
  });

  it('is absent, and the phase not flagged, where /proc could not be read', () => {
    const load = phaseLoad({ at: 0, selfUs: 0 }, { at: 1000, selfUs: 1 });
    expect(load.otherCores).toBeUndefined();
    expect(load.noisy).toBe(false);
  });
});
