import type { QueueInfo } from '../admin/queue-admin.js';
import type { JobPage } from '../admin/job-pages.js';
import { LISTABLE, type ListableStatus } from '../admin/job-cursor.js';
import { html, type SafeHtml } from './html.js';
import { stateBadge, when } from './badges.js';
import { action, seg, type PageContext } from './dashboard-layout.js';
import { problemText, type ReadOutcome } from './entry-rows.js';
import { lanesSection } from './lanes-section.js';
import type { JobSearchPage } from '../admin/job-search.js';
import { filterForm, filterPager, statusQuery, type JobFilterQuery } from './job-filter-form.js';

/** What a queue's page shows. */
export interface QueuePageData {
  /** Counts and pause state. */
  readonly info: QueueInfo;
  /** The status listed. */
  readonly status: ListableStatus;
  /** The listed page of jobs (a filtered one when `filter` is given). */
  readonly jobs: JobPage | JobSearchPage;
  /** The filters of a filtered listing (job-filter-form.ts). */
  readonly filter?: JobFilterQuery;
  /** True when this is not the first page. */
  readonly paged: boolean;
  /** The chart region (stored history: throughput and latency, with range links), when the charts are on. */
  readonly charts?: SafeHtml;
  /** Why the listed jobs could not be read (an index of another type, …): the table is then empty. */
  readonly jobsError?: string;
}

const NO_COUNTS = { scheduled: 0, pending: 0, active: 0, done: 0, dead: 0, cancelled: 0, waiting: 0 };

/** The counts and jobs of a queue's page from two reads that may each have failed on the data (shown, not thrown). */
export function queueData(queue: string, info: ReadOutcome<QueueInfo>, jobs: ReadOutcome<JobPage | JobSearchPage>): Pick<QueuePageData, 'info' | 'jobs' | 'jobsError'> {
  return {
    info: info.ok ? info.value : { name: queue, paused: false, pausedLanes: [], counts: NO_COUNTS, error: info.error, problem: 'unreadable' },
    jobs: jobs.ok ? jobs.value : { jobs: [] },
    jobsError: jobs.ok ? undefined : jobs.error,
  };
}

/** The status tabs, each with its count (live); a filtered page's tabs keep the filters. */
function tabs(ctx: PageContext, d: QueuePageData): SafeHtml {
  const q = `${ctx.base}/queues/${seg(d.info.name)}`;
  return html`<p class="tabs" id="counts" data-live>${LISTABLE.map(
    (s) => html`<a href="${q}?${statusQuery(s, d.filter)}" class="${s === d.status ? 'on' : ''}">${stateBadge(s)} <span data-count="${s}">${d.info.counts[s]}</span></a>`,
  )}</p>`;
}

/** A queue: pause/resume, counts, throughput, jobs of one status newest first with cursor pages, search by id. */
export function queuePage(ctx: PageContext, d: QueuePageData, notice?: SafeHtml): SafeHtml {
  const name = d.info.name;
  const q = `/queues/${seg(name)}`;
  const toggle = d.info.paused ? action(ctx, `${q}/resume`, 'Resume') : action(ctx, `${q}/pause`, 'Pause');
  const retryAll = d.status === 'dead' && d.jobs.jobs.length ? action(ctx, `${q}/retry-dead`, `Retry all dead (${d.info.counts.dead})…`) : undefined; // asks on a confirmation page
  const rows = d.jobs.jobs.map((j) => {
    // An index member that is not a job id has no page; a row of another type shows why it is unreadable.
    const id = j.unreadable?.startsWith('EMQ_BAD_ID') ? html`${j.id}` : html`<a href="${ctx.base}${q}/jobs/${seg(j.id)}">${j.id}</a>`;
    const error = j.unreadable ? html`<span class="err" data-problem="unreadable">unreadable: ${j.unreadable}</span>` : j.error;
    return html`<tr data-job="${j.id}"><td>${id}</td><td>${when(j.createdAt)}</td>
<td>${when(j.at)}</td><td class="n">${j.attempts}</td><td>${error}</td><td>${j.status === 'dead' && !j.unreadable ? action(ctx, `${q}/jobs/${seg(j.id)}/retry`, 'Retry') : ''}</td></tr>`;
  });
  const unreadable = [
    d.info.error ? html`<p class="notice err" id="counts-unreadable">counts ${problemText(d.info)}</p>` : '',
    d.jobsError ? html`<p class="notice err" id="jobs-unreadable">${d.status} jobs unreadable: ${d.jobsError}</p>` : '',
  ];
  const pager = [
    d.paged ? html`<a href="${ctx.base}${q}?status=${d.status}">← Newest</a> ` : '',
    d.jobs.next ? html`<a id="next" href="${ctx.base}${q}?status=${d.status}&amp;cursor=${seg(d.jobs.next)}">Older →</a>` : '',
  ];
  return html`<p><a href="${ctx.base}/">Queues</a></p>
<h1>${name} ${d.info.paused ? html`<span class="paused">paused</span>` : ''}</h1>${notice ?? ''}
<p>${toggle}${retryAll}</p>${lanesSection(ctx, d.info)}${unreadable}${tabs(ctx, d)}
${d.charts ?? ''}
<form method="get" action="${ctx.base}${q}/search"><label>Job id or business id <input name="id" size="34" required></label> <button type="submit">Find</button></form>
${filterForm(ctx, q, d.status, d.filter)}
<h2>${d.status} jobs${d.filter ? ' matching the filters' : ''}, newest first</h2>
<table id="jobs"><thead><tr><th>id</th><th>created</th><th>at</th><th>attempts</th><th>error</th><th></th></tr></thead><tbody>${rows}</tbody></table>
${d.jobs.jobs.length || d.jobsError ? '' : html`<p>No ${d.status} jobs${d.filter ? ' matched here' : ''}.</p>`}${
    d.filter && 'examined' in d.jobs ? filterPager(ctx, q, d.status, d.jobs, d.filter, d.paged) : html`<p>${pager}</p>`
  }`;
}
