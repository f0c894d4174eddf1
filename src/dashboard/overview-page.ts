import type { NamePage, QueueInfo } from '../admin/queue-admin.js';
import type { StoredMetrics } from '../admin/queue-metrics.js';
import { chartRegion, sparkline } from './chart.js';
import { html, type SafeHtml } from './html.js';
import { seg, type PageContext } from './dashboard-layout.js';
import { problemCell, shownName, type ReadOutcome } from './entry-rows.js';
import type { ChartRange } from './metrics-history.js';

/** The statuses shown as count columns, in ladder order. */
export const COUNT_COLUMNS = ['pending', 'scheduled', 'active', 'done', 'dead', 'cancelled'] as const;

/** What the overview shows. */
export interface OverviewData {
  /** One page of the queue registry. */
  readonly queues: NamePage<QueueInfo>;
  /** The `after` this page started from. */
  readonly after?: string;
  /** The stored history (absent when the charts are off): every queue's, and each listed queue's. */
  readonly history?: {
    readonly range: ChartRange;
    readonly total: ReadOutcome<StoredMetrics>;
    readonly queues: ReadonlyMap<string, ReadOutcome<StoredMetrics>>;
  };
}

/** One queue's row: link, pause state, counts, a sparkline of its completed jobs over the range. */
function queueRow(ctx: PageContext, q: QueueInfo, d: OverviewData): SafeHtml {
  // A registry entry that is not a queue name gets no link: it has no page.
  const link = q.problem === 'invalid name' ? html`${shownName(q.name)}` : html`<a href="${ctx.base}/queues/${seg(q.name)}">${shownName(q.name)}</a>`;
  if (q.error) return html`<tr data-queue="${shownName(q.name)}"><td>${link}</td>${problemCell(q, COUNT_COLUMNS.length + 1)}</tr>`;
  const read = d.history?.queues.get(q.name);
  const spark = !read ? '' : read.ok ? sparkline(read.value, { width: 160, height: 28 }) : html`<span class="err" data-problem="history">history unreadable</span>`;
  return html`<tr data-queue="${q.name}"><td>${link}${q.paused ? html` <span class="paused">paused</span>` : ''}</td>
${COUNT_COLUMNS.map((s) => html`<td class="${s === 'dead' && q.counts.dead > 0 ? 'n st-dead' : 'n'}" data-count="${s}">${q.counts[s]}</td>`)}<td>${spark}</td></tr>`;
}

/** The overview: every known queue with counts and throughput, and the total chart. */
export function overviewPage(ctx: PageContext, d: OverviewData): SafeHtml {
  const items = d.queues.items;
  const total = d.history ? chartRegion({ href: `${ctx.base}/`, keep: d.after !== undefined ? `after=${seg(d.after)}&` : '' }, d.history.range, d.history.total, false) : '';
  const next = d.queues.next ? html`<a href="${ctx.base}/?after=${seg(d.queues.next)}">Next queues →</a>` : '';
  const first = d.after !== undefined ? html`<a href="${ctx.base}/">← First queues</a> ` : '';
  const bad = d.queues.unreadable ? html`<p class="notice err" id="unreadable">${d.queues.unreadable} of these queues could not be read (shown with why).</p>` : '';
  const table = items.length
    ? html`<table><thead><tr><th>queue</th>${COUNT_COLUMNS.map((s) => html`<th>${s}</th>`)}<th>completed (${d.history?.range ?? ''})</th></tr></thead><tbody>${items.map((q) => queueRow(ctx, q, d))}</tbody></table>`
    : html`<p>No queue has announced itself yet (a queue announces itself on its first enqueue or when a consumer starts).</p>`;
  return html`<h1>Queues</h1>${d.history ? html`<h2>Throughput, all queues (stored history)</h2>` : ''}${total}
<div id="queues" data-live>${bad}${table}</div><p>${first}${next}</p>`;
}
