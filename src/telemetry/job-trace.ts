import type { EnqueueItem } from '../queue/queue-options.js';

/**
 * The producer side of job trace propagation: each item's `opts.traceparent` is set to the
 * enqueue span's `traceparent` (an item that names its own keeps it). Enqueue writes it to the
 * job's extras as `tp` and claim hands it back, so the process span continues the trace
 * (docs/telemetry.md, "Jobs").
 */
export function withTraceParent<T>(items: readonly EnqueueItem<T>[], traceparent: string): EnqueueItem<T>[] {
  if (!Array.isArray(items)) return items as EnqueueItem<T>[];
  return items.map((it) => (it === null || typeof it !== 'object' || it.opts?.traceparent !== undefined ? it : { ...it, opts: { ...it.opts, traceparent } }));
}
