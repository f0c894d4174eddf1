import { InvalidOptionError } from '../core/errors.js';
import { routeByName } from '../queue/name-router.js';
import type { JobHandler } from '../queue/job.js';
import type { ProcessorOptions } from '../queue/processor-options.js';
import type { DiscoveredProcessor } from './processor-explorer.js';

/** Options that are the consumer loop's, not one method's: every method of a queue that sets one must agree. */
const LOOP_KEYS = ['concurrency', 'prefetch', 'leaseMs', 'attempts', 'backoff', 'timeoutMs'] as const;

const methodList = (ps: readonly DiscoveredProcessor[]): string => ps.map((p) => p.name).join(', ');

/**
 * The consumer loops of the discovered processors: one per queue. A queue with a single method
 * without a name keeps it as it is. A queue whose methods name job names (`@Processor(queue,
 * { name })`, distinct, plus at most one without a name: the catch-all, which the explorer
 * checks) gets one loop whose handler routes each job by `job.name` (`routeByName`: a name
 * nothing takes fails fatally, EMQ_NO_HANDLER). Its loop options are the union of the methods'
 * (`concurrency`, `prefetch`, …: a value set by two methods must be the same, else
 * `InvalidOptionError`), so the methods share one claim stream and one concurrency. `@Flow` and
 * batch methods take no name and share no queue.
 */
export function routeProcessors(found: readonly DiscoveredProcessor[]): DiscoveredProcessor[] {
  const byQueue = new Map<string, DiscoveredProcessor[]>();
  for (const p of found) byQueue.set(p.queue, [...(byQueue.get(p.queue) ?? []), p]);
  const out: DiscoveredProcessor[] = [];
  for (const [queue, ps] of byQueue) {
    if (ps.length === 1 && ps[0].options.name === undefined) {
      out.push(ps[0]);
      continue;
    }
    const odd = ps.find((p) => p.flow || p.options.batch);
    if (odd) {
      throw new InvalidOptionError(`${odd.name}: a @Flow or batch processor takes no job name and shares its queue "${queue}" with no other method (${methodList(ps)})`);
    }
    const options: Record<string, unknown> = {};
    for (const key of LOOP_KEYS) {
      const setters = ps.filter((p) => p.options[key] !== undefined);
      const values = new Set(setters.map((p) => JSON.stringify(p.options[key])));
      if (values.size > 1) {
        throw new InvalidOptionError(`queue "${queue}": ${methodList(setters)} set ${key} differently; its methods share one consumer loop, so set it once (or the same everywhere)`);
      }
      if (setters.length > 0) options[key] = setters[0].options[key];
    }
    const byName = new Map<string, JobHandler<unknown, unknown>>();
    let catchAll: JobHandler<unknown, unknown> | undefined;
    for (const p of ps) {
      if (p.options.name === undefined) catchAll = p.handler;
      else byName.set(p.options.name, p.handler);
    }
    out.push({ queue, options: options as ProcessorOptions, handler: routeByName(queue, { byName, catchAll }), name: methodList(ps) });
  }
  return out;
}
