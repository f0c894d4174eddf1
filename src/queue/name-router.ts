import { NoHandlerError } from '../core/errors.js';
import type { Job, JobHandler } from './job.js';

/** The handlers of one queue by job name (`@Processor(queue, { name })`), and its catch-all. */
export interface NamedRoutes<T = unknown, R = unknown> {
  /** One handler per job name. */
  readonly byName: ReadonlyMap<string, JobHandler<T, R>>;
  /** Takes every job whose name `byName` lacks, and jobs without a name (`@Processor(queue)`). */
  readonly catchAll?: JobHandler<T, R>;
}

/**
 * One handler for a queue that dispatches each job by its name (`job.name`): the handler named
 * for it, else the catch-all. A job nothing takes fails with `NoHandlerError` (EMQ_NO_HANDLER),
 * which the consumer treats as fatal (straight to dead, no retry). All routes share the one
 * consumer loop of the queue, so one claim stream and one concurrency.
 */
export function routeByName<T, R>(queue: string, routes: NamedRoutes<T, R>): JobHandler<T, R> {
  const { byName, catchAll } = routes;
  if (byName.size === 0 && catchAll) return catchAll;
  const handled = [...byName.keys()].sort();
  return (job: Job<T>) => {
    const name = job.name;
    const h = (name === undefined ? undefined : byName.get(name)) ?? catchAll;
    if (!h) throw new NoHandlerError(name, handled, queue);
    return h(job);
  };
}
