import type { HistogramSnapshot, MetricsSnapshot } from './metrics-snapshot.js';

/** The content type of the Prometheus text exposition format (version 0.0.4). */
export const prometheusContentType = 'text/plain; version=0.0.4; charset=utf-8';

type Labels = Readonly<Record<string, string>>;

const escape = (v: string): string => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const labelText = (l: Labels): string => {
  const parts = Object.entries(l).map(([k, v]) => `${k}="${escape(v)}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
};
const num = (v: number): string => (Number.isFinite(v) ? String(v) : v > 0 ? '+Inf' : v < 0 ? '-Inf' : 'NaN');

/** Collects samples per metric family, then writes each family with its HELP and TYPE once. */
class Families {
  private readonly order: string[] = [];
  private readonly byName = new Map<string, { help: string; type: string; lines: string[] }>();

  add(name: string, type: 'counter' | 'gauge' | 'histogram', help: string, line: string): void {
    let f = this.byName.get(name);
    if (!f) {
      f = { help, type, lines: [] };
      this.byName.set(name, f);
      this.order.push(name);
    }
    f.lines.push(line);
  }

  sample(name: string, type: 'counter' | 'gauge', help: string, labels: Labels, value: number): void {
    this.add(name, type, help, `${name}${labelText(labels)} ${num(value)}`);
  }

  histogram(name: string, help: string, labels: Labels, h: HistogramSnapshot): void {
    h.boundsMs.forEach((b, i) => this.add(name, 'histogram', help, `${name}_bucket${labelText({ ...labels, le: num(b / 1000) })} ${h.cumulative[i]}`));
    this.add(name, 'histogram', help, `${name}_bucket${labelText({ ...labels, le: '+Inf' })} ${h.count}`);
    this.add(name, 'histogram', help, `${name}_sum${labelText(labels)} ${num(h.sumMs / 1000)}`);
    this.add(name, 'histogram', help, `${name}_count${labelText(labels)} ${h.count}`);
  }

  text(): string {
    const out: string[] = [];
    for (const name of this.order) {
      const f = this.byName.get(name)!;
      out.push(`# HELP ${name} ${f.help}`, `# TYPE ${name} ${f.type}`, ...f.lines);
    }
    return out.length === 0 ? '' : `${out.join('\n')}\n`;
  }
}

const QUEUE_COUNTERS = [
  ['enqueued', 'Jobs added by enqueue calls of this process.'],
  ['completed', 'Completions the complete script accepted.'],
  ['failed', 'Failed attempts (the handler threw or timed out).'],
  ['retried', 'Failed attempts scheduled to run again.'],
  ['buried', 'Jobs moved to the morgue (dead): after their last failed attempt, or reaped on it.'],
  ['reaped', 'Jobs whose lease expired, moved by a reap of this process.'],
  ['refused', 'Completions refused by the fencing token (the lease was lost).'],
] as const;

const CACHE_COUNTERS = [
  ['echomq_cache_misses_total', 'misses', 'Cache flights that found no live value.'],
  ['echomq_cache_loads_total', 'loads', 'Cache loader runs.'],
  ['echomq_cache_stale_served_total', 'staleServed', 'Values served past their TTL within their grace.'],
  ['echomq_cache_invalidations_total', 'invalidations', 'Cache keys invalidated (by key or tag).'],
  ['echomq_cache_l1_evictions_total', 'l1Evictions', 'L1 entries pushed out by its bounds.'],
  ['echomq_cache_bypasses_total', 'bypasses', 'Calls that ran their loader uncached because L2 was unavailable.'],
] as const;

/** Writes a metrics snapshot in the Prometheus text exposition format (docs/telemetry.md). */
export function formatPrometheus(s: MetricsSnapshot): string {
  const f = new Families();
  for (const q of s.queues) {
    const l = { queue: q.queue };
    for (const [key, help] of QUEUE_COUNTERS) f.sample(`echomq_jobs_${key}_total`, 'counter', help, l, q[key]);
  }
  for (const q of s.queues) {
    if (!q.jobs) continue;
    for (const [status, n] of Object.entries(q.jobs)) f.sample('echomq_queue_jobs', 'gauge', 'Jobs of the queue per status, read at scrape (waiting = pending).', { queue: q.queue, status }, n);
  }
  for (const q of s.queues) f.histogram('echomq_job_processing_seconds', 'Handler run time, start to settle.', { queue: q.queue }, q.processing);
  for (const g of s.groups) {
    const l = { topic: g.topic, group: g.group };
    if (g.lag !== null) f.sample('echomq_bus_group_lag', 'gauge', 'Entries of the topic not yet delivered to the group.', l, g.lag);
    f.sample('echomq_bus_group_pending', 'gauge', 'Entries delivered to the group and not yet acknowledged.', l, g.pending);
  }
  f.sample('echomq_cache_hits_total', 'counter', 'Cache reads served fresh, by tier.', { tier: 'l1' }, s.cache.l1Hits);
  f.sample('echomq_cache_hits_total', 'counter', 'Cache reads served fresh, by tier.', { tier: 'l2' }, s.cache.l2Hits);
  for (const [name, key, help] of CACHE_COUNTERS) f.sample(name, 'counter', help, {}, s.cache[key]);
  return f.text();
}
