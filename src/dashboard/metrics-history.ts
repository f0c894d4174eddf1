import type { QueueAdmin } from '../admin/queue-admin.js';
import type { StoredMetrics } from '../admin/queue-metrics.js';
import { InvalidOptionError } from '../core/errors.js';
import { describeError } from '../core/reply-errors.js';
import { nameProblem } from '../admin/registry.js';
import { html, type SafeHtml } from './html.js';
import { readOutcome, type ReadOutcome } from './entry-rows.js';

/** The ranges the charts offer (`?range=`), each with the interval its points span. */
export const CHART_RANGES = {
  '1h': { span: 3_600_000, step: 60_000 },
  '6h': { span: 21_600_000, step: 300_000 },
  '24h': { span: 86_400_000, step: 3_600_000 },
  '7d': { span: 604_800_000, step: 21_600_000 },
} as const;

/** A chart range name. */
export type ChartRange = keyof typeof CHART_RANGES;

/** The `range` query parameter, checked (default `1h`; another value is `InvalidOptionError`, a 400 page). */
export function chartRange(q: URLSearchParams): ChartRange {
  const r = q.get('range') ?? '1h';
  if (!Object.hasOwn(CHART_RANGES, r)) throw new InvalidOptionError(`range must be one of ${Object.keys(CHART_RANGES).join(', ')}`);
  return r as ChartRange;
}

/** The range links (`1h · 6h · 24h · 7d`), the current one marked, each keeping `keep` (`status=dead&`). */
export function rangeLinks(href: string, current: ChartRange, keep = ''): SafeHtml {
  return html`<p class="tabs" id="ranges">Range: ${Object.keys(CHART_RANGES).map((r) => html`<a href="${href}?${keep}range=${r}" class="${r === current ? 'on' : ''}" data-range="${r}">${r}</a>`)}</p>`;
}

/** How long a read is reused: consumers flush every 5 s, so a fresher read would show nothing new. */
const REUSE_MS = 5000;
const MAX_CACHED = 500;

/**
 * The stored history behind the dashboard's charts (`QueueAdmin.metrics`, read only): every read
 * is reused for 5 s, so live refreshes and many open pages cost one read per queue and range. A
 * read that fails (an unknown queue, Valkey down) is shown as such, never thrown.
 */
export class MetricsHistory {
  private readonly cache = new Map<string, { at: number; read: Promise<ReadOutcome<StoredMetrics>> }>();

  constructor(private readonly admin: QueueAdmin) {}

  /** One queue's history over `range` (`undefined` queue: every queue added up). */
  read(queue: string | undefined, range: ChartRange): Promise<ReadOutcome<StoredMetrics>> {
    const key = `${range}\0${queue ?? ''}`;
    const now = Date.now();
    const hit = this.cache.get(key);
    if (hit && now - hit.at < REUSE_MS) return hit.read;
    const { span, step } = CHART_RANGES[range];
    const to = Math.ceil(now / step) * step; // the current interval last: exactly span / step points
    const opts = { from: to - span, to, step };
    const read = readOutcome(queue === undefined ? this.admin.metricsAll(opts) : this.admin.metrics(queue, opts));
    this.cache.delete(key);
    this.cache.set(key, { at: now, read });
    for (const [k, v] of this.cache) if (this.cache.size > MAX_CACHED || now - v.at >= REUSE_MS) this.cache.delete(k);
    return read;
  }
}

/** What the overview shows of the history: every queue's, and each listed queue's (for its sparkline). */
export interface OverviewHistory {
  /** The range shown. */
  readonly range: ChartRange;
  /** Every queue added up. */
  readonly total: ReadOutcome<StoredMetrics>;
  /** Each listed queue's, by name. */
  readonly queues: ReadonlyMap<string, ReadOutcome<StoredMetrics>>;
}

/** The overview's history over `range`: the total and the listed queues' (names the key grammar refuses are left out). */
export async function overviewHistory(h: MetricsHistory, range: ChartRange, names: readonly string[]): Promise<OverviewHistory> {
  const legal = names.filter((q) => nameProblem(q, 'queue') === undefined);
  const [total, ...each] = await Promise.all([h.read(undefined, range), ...legal.map((q) => h.read(q, range).catch((err: unknown) => ({ ok: false as const, error: describeError(err) })))]);
  return { range, total, queues: new Map(legal.map((q, i) => [q, each[i]])) };
}
