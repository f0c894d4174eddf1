import { checks41, targets41Console, targets41Section } from '../targets41.js';
import type { PhaseRecord, Report } from '../format.js';
import type { PhaseCost } from '../probe.js';

const cost = (commandsPerJob: number, scriptsPerJob: number): PhaseCost => ({
  seconds: 1,
  wallUsPerJob: 2000,
  clientUsPerJob: 1,
  serverUsPerJob: 1,
  scriptsPerJob,
  scriptUsPerJob: 1,
  commandsPerJob,
  blockingPerJob: 0,
});

const latencyRecord = (system: PhaseRecord['system'], commands: number, scripts: number): PhaseRecord => ({
  phase: 'latency',
  system,
  rep: 0,
  values: { latency_p50_ms: 1, latency_p99_ms: 2 },
  cost: cost(commands, scripts),
});

const stat = (median: number) => ({ median, min: median, max: median, pairs: 1 });

/** A run that measured only what the checks read (the rest of a Report is not used by them). */
const report = {
  results: {
    echomq: { latency_p50_ms: 0.65, latency_p99_ms: 2, latency_5k_p50_ms: 0.5, latency_5k_p99_ms: 1 },
    bullmq: { latency_p50_ms: 1.2, latency_p99_ms: 5, latency_5k_p50_ms: 2, latency_5k_p99_ms: 4 },
    beequeue: { latency_p50_ms: 0.5, latency_p99_ms: 2.5, latency_5k_p50_ms: 400, latency_5k_p99_ms: 700 },
  },
  pairs: {
    latency_p50_ms: { bullmq: stat(0.54), beequeue: stat(1.3) },
    latency_p99_ms: { bullmq: stat(0.4), beequeue: stat(0.8) },
  },
  medianRecords: [latencyRecord('echomq', 10, 1), latencyRecord('bullmq', 30, 2), latencyRecord('beequeue', 14, 1)],
  echoOnly: {
    bus: { bus_group_c1_per_s: 7000, bus_group_c1_prefetch50_per_s: 90_000 },
    busAnchors: { bus_group_c1_per_s: { value: 10_000, ratio: stat(0.7) }, bus_group_c1_prefetch50_per_s: { value: 100_000, ratio: stat(0.9) } },
  },
  flows: { rows: [] },
  cache: {
    results: {
      echomq: { cache_invalidation_lag_p99_ms: 6, cache_l2_hit_per_s: 40_000 },
      bentocache: { cache_invalidation_lag_p99_ms: 3, cache_l2_hit_per_s: 20_000 },
    },
  },
  env: { quick: true },
  seconds: 80,
} as unknown as Report;

describe('bench: the issue-41 targets', () => {
  const byTarget = new Map(checks41(report).map((c) => [c.target, c]));

  it('judges each target from the run: met, missed by how much, measured, not run', () => {
    expect(byTarget.get("latency p99 at 500/s ≤ ½ BullMQ's")?.verdict).toBe('met');
    expect(byTarget.get("latency p50 at 500/s ≤ bee-queue's")?.verdict).toBe('missed (1.30× the allowed value)');
    expect(byTarget.get("Valkey commands per job at 500/s ≤ bee-queue's")?.verdict).toBe('met');
    expect(byTarget.get('Bus group c1 ≥ 85% of a raw Streams consumer group')?.verdict).toBe('missed (18% short)');
    expect(byTarget.get('Bus group c1 with `prefetch: 50` ≥ 85% of raw (COUNT 50)')?.verdict).toBe('met');
    expect(byTarget.get('cache invalidation lag p99 < 5 ms')?.verdict).toBe('missed (1.20× the allowed value)');
    expect(byTarget.get('cache L2 hit ≥ 1.5× bentocache')?.verdict).toBe('met');
    expect(byTarget.get("flows/s saturated ≥ 3× BullMQ's FlowProducer")?.verdict).toBe('not run');
    expect(byTarget.get("latency p50 at 5,000/s ≤ bee-queue's")?.verdict).toBe('not run');
    expect(byTarget.get('`npm run bench -- --quick` under 5 minutes')?.verdict).toBe('met');
    expect([...byTarget.values()].filter((c) => c.target.includes('cluster')).every((c) => c.verdict === 'not run')).toBe(true);
  });

  it('renders the section with the per-pair ratio, the verdict and, for a miss only, the link to its bound', () => {
    const md = targets41Section(report);
    expect(md).toMatch(/^## Targets \(issue 41\)/);
    expect(md).toContain(
      "| latency p50 at 500/s ≤ bee-queue's | 1.30× (EchoMQ 0.65 ms, bee-queue 0.5 ms) | **missed (1.30× the allowed value)** | [bounds.md, Light load](bounds.md#light-load-where-the-time-goes) |",
    );
    expect(md).toContain("| latency p99 at 500/s ≤ ½ BullMQ's | 0.40× (EchoMQ 2 ms, BullMQ 5 ms) | **met** | — |");
    expect(md).toContain('[bus.md, Performance](bus.md#performance)');
    expect(md).toContain('| Bus group c1 with `prefetch: 50` ≥ 85% of raw (COUNT 50) | 0.90× (EchoMQ 90,000/s, raw 100,000/s) | **met** | — |');
    expect(md).toContain('[cache.md, Invalidation lag](cache.md#invalidation-lag)');
    expect(md).not.toContain('flows.md#performance');
    expect(targets41Console(report)).toContain('→ bounds.md#light-load-where-the-time-goes');
  });
});
