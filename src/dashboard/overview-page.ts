import type { NamePage, QueueInfo } from '../admin/queue-admin.js';
import { throughputChart } from './chart.js';
import { html, type SafeHtml } from './html.js';
import { seg, type PageContext } from './dashboard-layout.js';
import type { ThroughputSampler } from './throughput-sampler.js';
import { problemCell, shownName } from './entry-rows.js';

/** The statuses shown as count columns, in ladder order. */
export const COUNT_COLUMNS = ['pending', 'scheduled', 'active', 'done', 'dead', 'cancelled'] as const;

/** What the overview shows. */
export interface OverviewData {
  /** One page of the queue registry. */
  readonly queues: NamePage<QueueInfo>;
  /** The `after` this page started from. */
  readonly after?: string;
  /** The throughput sampler, when it runs. */
  readonly throughput?: ThroughputSampler;
}

/** One queue's row: link, pause state, counts, a sparkline of its throughput. */
function queueRow(ctx: PageContext, q: QueueInfo, d: OverviewData): SafeHtml {
  // A registry entry that is not a queue name gets no link: it has no page.
  const link = q.problem === 'invalid name' ? html`${shownName(q.name)}` : html`<a href="${ctx.base}/queues/${seg(q.name)}">${shownName(q.name)}</a>`;
  if (q.error) return html`<tr data-queue="${shownName(q.name)}"><td>${link}</td>${problemCell(q, COUNT_COLUMNS.length + 1)}</tr>`;
  const spark = d.throughput ? throughputChart(d.throughput.series(q.name), { width: 160, height: 28 }, 60) : '';
  return html`<tr data-queue="${q.name}"><td>${link}${q.paused ? html` <span class="paused">paused</span>` : ''}</td>
${COUNT_COLUMNS.map((s) => html`<td class="n" data-count="${s}">${q.counts[s]}</td>`)}<td>${spark}</td></tr>`;
}

/** The overview: every known queue with counts and throughput, and the total chart. */
export function overviewPage(ctx: PageContext, d: OverviewData): SafeHtml {
  const items = d.queues.items;
  const total = d.throughput ? html`<div id="chart" data-live>${throughputChart(d.throughput.total(), { width: 720, height: 120 }, 120)}</div>` : '';
  const next = d.queues.next ? html`<a href="${ctx.base}/?after=${seg(d.queues.next)}">Next queues →</a>` : '';
  const first = d.after !== undefined ? html`<a href="${ctx.base}/">← First queues</a> ` : '';
  const bad = d.queues.unreadable ? html`<p class="notice err" id="unreadable">${d.queues.unreadable} of these queues could not be read (shown with why).</p>` : '';
  const table = items.length
    ? html`<table><thead><tr><th>queue</th>${COUNT_COLUMNS.map((s) => html`<th>${s}</th>`)}<th>done per interval</th></tr></thead><tbody>${items.map((q) => queueRow(ctx, q, d))}</tbody></table>`
    : html`<p>No queue has announced itself yet (a queue announces itself on its first enqueue or when a consumer starts).</p>`;
  return html`<h1>Queues</h1><h2>Throughput (jobs done, all sampled queues)</h2>${total}
<div id="queues" data-live>${bad}${table}</div><p>${first}${next}</p>`;
}
