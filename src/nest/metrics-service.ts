import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { CacheService } from '../cache/cache-service.js';
import { QueueService } from '../queue/queue-service.js';
import { GroupOrchestrator } from './consumer-group-orchestrator.js';
import type { JobCounts } from '../queue/job.js';
import type { Histogram } from '../telemetry/metrics-registry.js';
import type { HistogramSnapshot, MetricsSnapshot, QueueMetrics } from '../telemetry/metrics-snapshot.js';
import { registerOtelMetrics } from '../telemetry/otel-metrics.js';
import { formatPrometheus } from '../telemetry/prometheus-format.js';
import { EchoMqTelemetry } from '../telemetry/telemetry.js';

/** Most queues whose job counts one scrape reads (in first-seen order); the rest show counters only. */
export const MAX_SCRAPED_QUEUES = 100;

function readHistogram(h: Histogram): HistogramSnapshot {
  const cumulative: number[] = [];
  let run = 0;
  for (const n of h.buckets) cumulative.push((run += n));
  return { boundsMs: h.bounds, cumulative, sumMs: h.sum, count: h.count };
}

/**
 * EchoMQ's metrics (docs/telemetry.md): per queue the counters of this process (enqueued,
 * completed, failed, retried, buried, reaped, refused) and the processing-time histogram, the
 * queue's jobs per status read at scrape (one round trip per queue, at most
 * `MAX_SCRAPED_QUEUES`), each consumer group's lag and pending entries (from the group loop's
 * last look: no extra call), and the cache's counters. `prometheus()` renders them for a
 * `/metrics` endpoint (`metricsController`); with `@opentelemetry/api` installed they are also
 * OpenTelemetry instruments.
 */
@Injectable()
export class EchoMqMetrics implements OnApplicationBootstrap {
  /** @internal Nest injects the module's telemetry, services and group loops. */
  constructor(
    private readonly telemetry: EchoMqTelemetry,
    private readonly queues: QueueService,
    private readonly cache: CacheService,
    private readonly groups: GroupOrchestrator,
  ) {}

  /** Registers the OpenTelemetry instruments when the API is there (no I/O). */
  onApplicationBootstrap(): void {
    const api = this.telemetry.otelMetrics;
    if (api) registerOtelMetrics(api, this.telemetry.registry, () => this.snapshot());
  }

  /** Every figure now: counters from memory, job counts read from Valkey (a failed read leaves `jobs` out). */
  async snapshot(): Promise<MetricsSnapshot> {
    const counted = this.telemetry.registry.queues();
    const jobs = await Promise.all(
      counted.map(([q], i) => (i < MAX_SCRAPED_QUEUES ? this.queues.counts(q).catch((): JobCounts | undefined => undefined) : Promise.resolve(undefined))),
    );
    const queues: QueueMetrics[] = counted.map(([queue, c], i) => ({
      queue,
      enqueued: c.enqueued,
      completed: c.completed,
      failed: c.failed,
      retried: c.retried,
      buried: c.buried,
      reaped: c.reaped,
      refused: c.refused,
      processing: readHistogram(c.processing),
      jobs: jobs[i],
    }));
    const groups = this.groups.consumers.map((g) => {
      const s = g.snapshot;
      return { topic: g.topic, group: g.group, lag: s ? s.lag : null, pending: s?.pending ?? 0 };
    });
    return { queues, groups, cache: this.cache.stats() };
  }

  /** The snapshot in the Prometheus text exposition format (serve it with `prometheusContentType`). */
  async prometheus(): Promise<string> {
    return formatPrometheus(await this.snapshot());
  }
}
