import type { Attributes, BatchObservableResult, Observable } from '@opentelemetry/api';
import type { MetricsRegistry } from './metrics-registry.js';
import type { MetricsSnapshot } from './metrics-snapshot.js';
import type { OtelApi } from './otel-loader.js';
import { INSTRUMENTATION_SCOPE } from './tracing.js';

const QUEUE_COUNTERS = ['enqueued', 'completed', 'failed', 'retried', 'buried', 'reaped', 'refused'] as const;
const CACHE_COUNTERS = ['l1Hits', 'l2Hits', 'misses', 'loads', 'staleServed', 'invalidations', 'l1Evictions', 'bypasses'] as const;
/** camelCase → snake_case at each capital only, so a digit stays with its letter: `l1Hits` → `l1_hits`. */
const snake = (s: string): string => s.replace(/[A-Z]/g, (m) => `_${m.toLowerCase()}`);

/**
 * Registers EchoMQ's OpenTelemetry instruments on the global meter provider (docs/telemetry.md):
 * observable counters and gauges read from `snapshot` at each collection, and the processing-time
 * histogram fed by the registry's observer (one `record` per handler run).
 */
export function registerOtelMetrics(api: OtelApi, registry: MetricsRegistry, snapshot: () => Promise<MetricsSnapshot>): void {
  const meter = api.metrics.getMeter(INSTRUMENTATION_SCOPE);
  const duration = meter.createHistogram('echomq.job.processing.duration', { unit: 's', description: 'Handler run time, start to settle.' });
  registry.observer = (queue, ms) => duration.record(ms / 1000, { 'messaging.destination.name': queue });
  const counters = Object.fromEntries(
    QUEUE_COUNTERS.map((k) => [k, meter.createObservableCounter(`echomq.jobs.${k}`, { unit: '{job}', description: `Jobs ${k} (docs/telemetry.md).` })]),
  ) as Record<(typeof QUEUE_COUNTERS)[number], Observable>;
  const jobs = meter.createObservableGauge('echomq.queue.jobs', { unit: '{job}', description: 'Jobs of the queue per status, read at collection.' });
  const lag = meter.createObservableGauge('echomq.bus.group.lag', { unit: '{event}', description: 'Entries not yet delivered to the group.' });
  const pending = meter.createObservableGauge('echomq.bus.group.pending', { unit: '{event}', description: 'Entries delivered and not yet acknowledged.' });
  const cache = Object.fromEntries(CACHE_COUNTERS.map((k) => [k, meter.createObservableCounter(`echomq.cache.${snake(k)}`, { description: `Cache ${k} (docs/telemetry.md).` })])) as Record<
    (typeof CACHE_COUNTERS)[number],
    Observable
  >;
  const all: Observable[] = [...Object.values(counters), jobs, lag, pending, ...Object.values(cache)];
  meter.addBatchObservableCallback(async (r: BatchObservableResult) => {
    const s = await snapshot();
    for (const q of s.queues) {
      const a: Attributes = { 'messaging.destination.name': q.queue };
      for (const k of QUEUE_COUNTERS) r.observe(counters[k], q[k], a);
      if (q.jobs) for (const [status, n] of Object.entries(q.jobs)) r.observe(jobs, n, { ...a, 'echomq.job.status': status });
    }
    for (const g of s.groups) {
      const a: Attributes = { 'messaging.destination.name': g.topic, 'messaging.consumer.group.name': g.group };
      if (g.lag !== null) r.observe(lag, g.lag, a);
      r.observe(pending, g.pending, a);
    }
    for (const k of CACHE_COUNTERS) r.observe(cache[k], s.cache[k]);
  }, all);
}
