import type { EnqueueItem } from '../queue/queue.service.js';
import { extrasWithTraceParent } from './traceparent.js';

/**
 * The job side of trace propagation, written against the per-job extras channel (a short JSON
 * text per job whose reserved field `tp` holds the producer's traceparent): each item's
 * `opts.extras` gets `tp` set, its other fields kept. Until `EnqueueOptions.extras` is carried to
 * the wire by enqueue and handed back by claim, the field is set and ignored (docs/telemetry.md,
 * "Jobs").
 */
export function withTraceExtras<T>(items: readonly EnqueueItem<T>[], traceparent: string): EnqueueItem<T>[] {
  if (!Array.isArray(items)) return items as EnqueueItem<T>[];
  return items.map((it) => {
    if (it === null || typeof it !== 'object') return it;
    const opts = (it.opts ?? {}) as EnqueueItem<T>['opts'] & { readonly extras?: string };
    const extras = extrasWithTraceParent(typeof opts.extras === 'string' ? opts.extras : undefined, traceparent);
    return { ...it, opts: { ...opts, extras } as EnqueueItem<T>['opts'] };
  });
}
