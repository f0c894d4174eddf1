import type { FailureListener } from '../queue/consumer/index.js';
import type { ConsumerListener } from '../queue/telemetry-hooks.js';
import type { Job, JobHandler } from '../queue/job.js';
import type { MetricsRegistry, QueueCounters } from './metrics-registry.js';
import type { EchoMqTracing } from './tracing.js';

const isThenable = (v: unknown): v is PromiseLike<unknown> => typeof (v as { then?: unknown } | null)?.then === 'function';

/**
 * The consumer listener that counts what a loop already learns: completions the complete script
 * accepted or refused (from the round's reply), and jobs a reap moved (from the reap's reply).
 */
export function countingListener(c: QueueCounters): ConsumerListener {
  return {
    completions(_sent, replies) {
      for (const ok of replies) {
        if (ok === 0) c.refused++;
        else c.completed++;
      }
    },
    reaped(r) {
      c.reaped += r.requeued + r.buried + r.cancelled;
      c.buried += r.buried;
    },
  };
}

/** A failure listener that counts each failed attempt (retried or buried), then calls `next`. */
export function countingFailures(c: QueueCounters, next?: FailureListener): FailureListener {
  return (f) => {
    c.failed++;
    if (f.outcome === 'retry') c.retried++;
    else c.buried++;
    next?.(f);
  };
}

/**
 * Wraps a job handler: its run time goes to the processing-time histogram (start to settle, as
 * the handler's promise settles), and, with `tracing`, it runs in a `process` span. The result
 * or error passes through unchanged.
 */
export function instrumentHandler<T, R>(queue: string, handler: JobHandler<T, R>, registry: MetricsRegistry, tracing?: EchoMqTracing): JobHandler<T, R> {
  const counters = registry.queue(queue);
  const timed = (job: Job<T>): Promise<R> | R => {
    const t0 = performance.now();
    let out: Promise<R> | R;
    try {
      out = handler(job);
    } catch (err) {
      registry.processed(counters, queue, performance.now() - t0);
      throw err;
    }
    if (!isThenable(out)) {
      registry.processed(counters, queue, performance.now() - t0);
      return out;
    }
    return Promise.resolve(out).then(
      (v) => {
        registry.processed(counters, queue, performance.now() - t0);
        return v;
      },
      (err: unknown) => {
        registry.processed(counters, queue, performance.now() - t0);
        throw err;
      },
    );
  };
  if (!tracing) return timed;
  return (job) => tracing.process(job as Job<unknown>, () => timed(job));
}
