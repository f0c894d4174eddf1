/**
 * Metrics and logs (docs/telemetry.md) in one Nest app against real Valkey: the per-queue counters
 * (enqueued, completed, failed, retried, buried, reaped, refused), the job gauges read at scrape,
 * the processing-time histogram, a group's lag, the cache's counters, served as Prometheus text by
 * `metricsController` over HTTP and as OpenTelemetry instruments; and one log line per retry,
 * burial, reap and refused completion, with queue, id, attempt and error.
 */
import 'reflect-metadata';
import { Injectable, type CanActivate, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { DataPoint, Histogram as OtelHistogram, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { BusService, CacheService, EchoMqMetrics, EchoMqModule, OnEvent, Processor, QueueService, metricsController, prometheusContentType, type Job } from '../../src/index.js';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { queueKeys } from '../../src/core/keys.js';
import { wire } from '../../src/core/wire/queue.js';
import { CapturedLogs } from '../helpers/nest.js';
import { installOtel, type OtelHarness } from '../helpers/otel.js';
import { eventually, openConnection, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

const Q = randomQueue('tm');
const REAPQ = randomQueue('tm-reap');
const TOPIC = randomQueue('tm-topic');
let helper: EchoMqConnection;
let gate!: () => void;
const gated = new Promise<void>((r) => (gate = r));

/** Takes `id`'s lease away (as an expired lease reaped by another process would) while its handler runs. */
async function loseLease(id: string): Promise<void> {
  const k = queueKeys(Q);
  const raw = rawClient();
  try {
    for (;;) {
      await raw.zadd(k.active, 0, id);
      const r = await wire.reap(helper.scriptClient, k, 10, 5, 100);
      if (r.jobs.some((j) => j.id === id)) return;
    }
  } finally {
    raw.disconnect();
  }
}

@Injectable()
class Workers {
  @Processor(Q, { concurrency: 4, attempts: 2, backoff: { type: 'fixed', delayMs: 0 }, leaseMs: 30_000 })
  async work(job: Job<{ mode: 'ok' | 'fail' | 'refuse' }>): Promise<string> {
    if (job.payload.mode === 'fail') throw new Error(`boom ${job.attempt}`);
    if (job.payload.mode === 'refuse' && job.attempt === 1) await loseLease(job.id);
    return 'done';
  }

  @Processor(REAPQ, { leaseMs: 300 })
  async reaped(): Promise<void> {}

  @OnEvent(TOPIC, { group: 'm', ackTimeoutMs: 300 })
  async handle(): Promise<void> {
    await gated;
  }
}

class Deny implements CanActivate {
  canActivate(): boolean {
    return false;
  }
}

const sample = (text: string, name: string, labels: string): number | undefined => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `) || (labels === '' && l.startsWith(`${name} `)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};
const points = (rm: ResourceMetrics, name: string): DataPoint<unknown>[] =>
  rm.scopeMetrics.flatMap((s) => s.metrics).filter((m) => m.descriptor.name === name).flatMap((m) => m.dataPoints as DataPoint<unknown>[]);
const forQueue = <T>(ps: DataPoint<unknown>[], q: string): T | undefined => ps.find((p) => p.attributes['messaging.destination.name'] === q)?.value as T | undefined;

describe('metrics and logs', () => {
  const logs = new CapturedLogs();
  let app: INestApplication;
  let o: OtelHarness;
  let base: string;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    o = installOtel();
    helper = await openConnection();
    // Two jobs claimed by a holder that then dies (never completes): the app's consumer reaps them.
    const plain = new QueueService(helper);
    ids.requeued = await plain.enqueue(REAPQ, { n: 1 });
    ids.buried = await plain.enqueue(REAPQ, { n: 2 }, { attempts: 1 });
    expect((await wire.claim(helper.scriptClient, queueKeys(REAPQ), 2, 50)).jobs).toHaveLength(2);
    const mod = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { url: testUrl() }, shutdownTimeoutMs: 2000 })],
      providers: [Workers],
      controllers: [metricsController(), metricsController({ path: 'guarded', guards: [Deny] })],
    })
      .setLogger(logs)
      .compile();
    app = mod.createNestApplication({ logger: logs });
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
    const queues = app.get(QueueService);
    for (const mode of ['ok', 'ok', 'ok'] as const) await queues.enqueue(Q, { mode });
    ids.fail = await queues.enqueue(Q, { mode: 'fail' });
    ids.refuse = await queues.enqueue(Q, { mode: 'refuse' });
    const cache = app.get(CacheService);
    await cache.getOrLoad('k', () => 1);
    await cache.getOrLoad('k', () => 2);
  });

  afterAll(async () => {
    gate();
    await app?.close();
    await helper?.close();
    await o.close();
  });

  it('counts, gauges, histogram, group lag and cache figures on GET /metrics, as Prometheus text', async () => {
    await app.get(QueueService).enqueueMany(REAPQ, [1, 2, 3, 4, 5, 6].map((n) => ({ payload: { n } })));
    for (let i = 0; i < 5; i++) await app.get(BusService).publish(TOPIC, { i });
    const metrics = app.get(EchoMqMetrics);
    await eventually(async () => {
      const s = await metrics.snapshot();
      const q = s.queues.find((x) => x.queue === Q);
      const r = s.queues.find((x) => x.queue === REAPQ);
      const g = s.groups.find((x) => x.topic === TOPIC);
      return q?.completed === 4 && q.buried === 1 && r?.reaped === 2 && r.completed === 7 && g?.lag === 4;
    }, 15_000, 'every job to settle and the group snapshot to show the lag');

    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(prometheusContentType);
    const text = await res.text();
    const q = `queue="${Q}"`;
    expect(text).toContain('# TYPE echomq_jobs_completed_total counter');
    expect(sample(text, 'echomq_jobs_enqueued_total', q)).toBe(5);
    expect(sample(text, 'echomq_jobs_completed_total', q)).toBe(4); // 3 ok + the refused job's second attempt
    expect(sample(text, 'echomq_jobs_refused_total', q)).toBe(1);
    expect(sample(text, 'echomq_jobs_failed_total', q)).toBe(2);
    expect(sample(text, 'echomq_jobs_retried_total', q)).toBe(1);
    expect(sample(text, 'echomq_jobs_buried_total', q)).toBe(1);
    expect(sample(text, 'echomq_jobs_reaped_total', q)).toBe(0); // the refused job was reaped by another process
    expect(sample(text, 'echomq_job_processing_seconds_count', q)).toBe(7);
    expect(sample(text, 'echomq_job_processing_seconds_bucket', `${q},le="+Inf"`)).toBe(7);
    expect(sample(text, 'echomq_queue_jobs', `${q},status="done"`)).toBe(4);
    expect(sample(text, 'echomq_queue_jobs', `${q},status="dead"`)).toBe(1);
    expect(sample(text, 'echomq_queue_jobs', `${q},status="pending"`)).toBe(0);
    const r = `queue="${REAPQ}"`;
    expect(sample(text, 'echomq_jobs_enqueued_total', r)).toBe(6); // the two reaped jobs were enqueued by another process
    expect(sample(text, 'echomq_jobs_reaped_total', r)).toBe(2);
    expect(sample(text, 'echomq_jobs_buried_total', r)).toBe(1);
    expect(sample(text, 'echomq_jobs_completed_total', r)).toBe(7);
    const g = `topic="${TOPIC}",group="m"`;
    expect(sample(text, 'echomq_bus_group_lag', g)).toBe(4);
    expect(sample(text, 'echomq_bus_group_pending', g)).toBe(1);
    expect(sample(text, 'echomq_cache_hits_total', 'tier="l1"')).toBe(1);
    expect(sample(text, 'echomq_cache_loads_total', '')).toBe(1);
    expect(sample(text, 'echomq_cache_misses_total', '')).toBe(1);

    // The mount takes guards.
    expect((await fetch(`${base}/guarded`)).status).toBe(403);

    // The same figures through OpenTelemetry metrics.
    const rm = await o.collect();
    expect(forQueue<number>(points(rm, 'echomq.jobs.completed'), Q)).toBe(4);
    expect(forQueue<number>(points(rm, 'echomq.jobs.reaped'), REAPQ)).toBe(2);
    expect(forQueue<OtelHistogram>(points(rm, 'echomq.job.processing.duration'), Q)?.count).toBe(7);
    expect(points(rm, 'echomq.bus.group.lag').map((p) => p.value)).toEqual([4]);
    // The cache instruments carry the names docs/telemetry.md gives (a digit stays with its letter).
    const cacheNames = rm.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.descriptor.name)).filter((n) => n.startsWith('echomq.cache.'));
    expect(cacheNames.sort()).toEqual(
      ['bypasses', 'invalidations', 'l1_evictions', 'l1_hits', 'l2_hits', 'loads', 'misses', 'stale_served'].map((n) => `echomq.cache.${n}`),
    );
    expect(points(rm, 'echomq.cache.l1_hits').map((p) => p.value)).toEqual([1]);
  });

  it('logs every retry, burial, reap and refused completion once, with queue, id, attempt and error', () => {
    const mention = (id: string) => logs.lines.filter((l) => l.message.includes(id) && l.level !== 'log');
    expect(mention(ids.fail)).toEqual([
      { level: 'warn', message: expect.stringMatching(new RegExp(`^job ${ids.fail} of "${Q}" failed attempt 1/2; retry at \\S+: Error: boom 1$`)) },
      { level: 'error', message: expect.stringMatching(new RegExp(`^job ${ids.fail} of "${Q}" is dead after attempt 2/2 \\(buried at \\S+\\): Error: boom 2$`)) },
    ]);
    expect(mention(ids.refuse)).toEqual([
      { level: 'warn', message: `job ${ids.refuse} of "${Q}" finished attempt 1, but its completion was refused (error: lease lost; the job was re-delivered)` },
    ]);
    expect(mention(ids.requeued)).toEqual([
      { level: 'warn', message: `job ${ids.requeued} of "${REAPQ}" lost its lease on attempt 1 (error: lease expired); requeued (pending again)` },
    ]);
    expect(mention(ids.buried)).toEqual([
      { level: 'error', message: `job ${ids.buried} of "${REAPQ}" lost its lease on attempt 1 (error: lease expired); buried (dead: it was the last attempt)` },
    ]);
  });
});
