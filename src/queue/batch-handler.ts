import type { Job, JobHandler } from './job.js';
import type { BatchOptions } from './processor-options.js';

/**
 * One job's outcome in a batch handler's reply: its result, or an `Error` instance (that job's
 * attempt fails with it, like a thrown error; a `FatalJobError` buries it).
 */
export type BatchOutcome<R = unknown> = R | Error;

/**
 * A batch handler (`@Processor(q, { batch: { size, maxWaitMs } })`): receives up to `size` jobs
 * and resolves to one outcome per job, in order (or to nothing: every job done without a
 * result). A throw fails every job of the batch.
 */
export type BatchHandler<T = unknown, R = unknown> = (jobs: Job<T>[]) => Promise<BatchOutcome<R>[] | void> | BatchOutcome<R>[] | void;

interface Waiting {
  readonly job: Job<unknown>;
  resolve(r: unknown): void;
  reject(e: unknown): void;
}

/**
 * Wraps a batch handler as a per-job handler: jobs the runner starts are gathered until `size`
 * are waiting or `maxWaitMs` passed since the first, then handed over together; each job's
 * attempt settles on its own outcome (fenced and retried per job, as for a plain handler).
 */
export function batchHandler(fn: BatchHandler<unknown, unknown>, o: BatchOptions): JobHandler<unknown, unknown> {
  let waiting: Waiting[] = [];
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const batch = waiting;
    waiting = [];
    if (batch.length === 0) return;
    Promise.resolve()
      .then(() => fn(batch.map((w) => w.job)))
      .then((out) => {
        if (out === undefined) return batch.forEach((w) => w.resolve(undefined));
        if (!Array.isArray(out) || out.length !== batch.length) {
          throw new Error(`the batch handler returned ${Array.isArray(out) ? out.length : typeof out} outcomes for ${batch.length} jobs`);
        }
        out.forEach((r, i) => (r instanceof Error ? batch[i].reject(r) : batch[i].resolve(r)));
      })
      .catch((err: unknown) => batch.forEach((w) => w.reject(err)));
  };
  return (job) =>
    new Promise((resolve, reject) => {
      waiting.push({ job, resolve, reject });
      if (waiting.length >= o.size) flush();
      else timer ??= setTimeout(flush, o.maxWaitMs ?? 50);
    });
}
