import type { JobSearchOptions, JobSearchPage } from '../admin/job-search.js';
import type { ListableStatus } from '../admin/job-cursor.js';
import { LISTABLE } from '../admin/job-cursor.js';
import { InvalidOptionError } from '../core/errors.js';
import { html, type SafeHtml } from './html.js';
import type { PageContext } from './dashboard-layout.js';

/**
 * The queue page's filter form and its pager (docs/dashboard.md, "Search and filters"): GET
 * parameters `from`, `to`, `error`, `field` + `equals`, `payload` beside `status`; with any of
 * them the page lists `QueueAdmin.findJobs` matches, bounded per request, and says how many index
 * entries it examined with a "continue" link.
 *
 * @module
 */

/** The filter parameters a queue page takes. */
export const FILTER_PARAMS = ['from', 'to', 'error', 'field', 'equals', 'payload'] as const;

/** The filter texts of a request, as typed (re-shown in the form, carried by the pager). */
export type JobFilterQuery = Readonly<Partial<Record<(typeof FILTER_PARAMS)[number], string>>>;

/** The non-empty filter parameters of a query, or undefined when there are none (the plain listing). */
export function filterQuery(query: URLSearchParams): JobFilterQuery | undefined {
  const out: Partial<Record<(typeof FILTER_PARAMS)[number], string>> = {};
  for (const p of FILTER_PARAMS) {
    const v = query.get(p);
    if (v !== null && v.trim() !== '') out[p] = p === 'from' || p === 'to' || p === 'field' ? v.trim() : v;
  }
  return Object.keys(out).length ? out : undefined; // a value without its field path is refused by `searchOptionsOf`
}

const UNIT: Readonly<Record<string, number>> = { s: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 };

/** An instant: ISO (`2026-12-07T10:00`, UTC unless it names a zone) or a duration ago (`15m`, `1h`, `7d`). */
function instantParam(text: string, name: string, now: number): Date {
  const ago = /^(\d{1,6})\s*(s|m|min|h|d)$/.exec(text);
  if (ago) return new Date(now - Number(ago[1]) * (UNIT[ago[2]] ?? 0));
  if (/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?)?(Z|[+-]\d{2}:\d{2})?$/.test(text)) {
    const zoned = /(Z|[+-]\d{2}:\d{2})$/.test(text) || text.length === 10 ? text : `${text.replace(' ', 'T')}Z`;
    const ms = Date.parse(zoned);
    if (!Number.isNaN(ms)) return new Date(ms);
  }
  throw new InvalidOptionError(`${name} must be an ISO instant (2026-12-07T10:00, UTC unless it names a zone) or a duration ago (15m, 1h, 7d)`);
}

/** The `findJobs` options of the filter texts; malformed ones refused (`InvalidOptionError`, 400). */
export function searchOptionsOf(f: JobFilterQuery, now = Date.now()): Omit<JobSearchOptions, 'status' | 'limit' | 'cursor'> {
  if (f.equals !== undefined && f.field === undefined) throw new InvalidOptionError('a payload field value needs the field path (e.g. user.id)');
  return {
    ...(f.from === undefined ? {} : { from: instantParam(f.from, 'from', now) }),
    ...(f.to === undefined ? {} : { to: instantParam(f.to, 'to', now) }),
    ...(f.error === undefined ? {} : { error: f.error }),
    ...(f.field === undefined ? {} : { field: { path: f.field, equals: f.equals ?? '' } }),
    ...(f.payload === undefined ? {} : { payload: f.payload }),
  };
}

/** The query string of a status and its filters (for links). */
function queryOf(status: ListableStatus, f: JobFilterQuery, cursor?: string): string {
  const p = new URLSearchParams({ status });
  for (const k of FILTER_PARAMS) if (f[k] !== undefined) p.set(k, f[k] as string);
  if (cursor) p.set('cursor', cursor);
  return p.toString();
}

/** The filter form (GET): status, from/to, error contains, payload field = value, payload contains. */
export function filterForm(ctx: PageContext, q: string, status: ListableStatus, f: JobFilterQuery = {}): SafeHtml {
  const input = (name: (typeof FILTER_PARAMS)[number], label: string, size: number, placeholder: string): SafeHtml =>
    html`<label>${label} <input name="${name}" size="${size}" maxlength="200" placeholder="${placeholder}" value="${f[name] ?? ''}"></label> `;
  return html`<form method="get" action="${ctx.base}${q}" id="filter" class="filter"><label>Status <select name="status">${LISTABLE.map(
    (s) => html`<option value="${s}"${s === status ? html` selected` : ''}>${s}</option>`,
  )}</select></label>
${input('from', 'From', 17, '1h or 2026-12-07T10:00')}${input('to', 'To', 17, 'UTC unless zoned')}${input('error', 'Error contains', 14, 'timeout')}
${input('field', 'Payload field', 10, 'user.id')}${input('equals', '=', 8, '42')}${input('payload', 'Payload contains', 12, 'text')}
<button type="submit">Filter</button>${Object.keys(f).length ? html` <a href="${ctx.base}${q}?status=${status}">Clear</a>` : ''}</form>`;
}

/** The pager of a filtered listing: how much of the index was examined, and "continue →" while it goes on. */
export function filterPager(ctx: PageContext, q: string, status: ListableStatus, page: JobSearchPage, f: JobFilterQuery, paged: boolean): SafeHtml {
  const n = (x: number): string => x.toLocaleString('en-US');
  return html`<p id="examined" data-examined="${page.examined}" data-total="${page.total}">Examined ${n(page.examinedSoFar)} of ${n(page.total)} ${status} entries${
    paged ? html` (${n(page.examined)} on this page)` : ''
  }; ${page.jobs.length} matched here.${page.next ? html` <a id="next" href="${ctx.base}${q}?${queryOf(status, f, page.next)}">Continue →</a>` : ' The end of the index.'}${
    paged ? html` <a href="${ctx.base}${q}?${queryOf(status, f)}">← From the newest</a>` : ''
  }</p>`;
}

/** The query string of a status tab: the status, and the filters when the page is filtered. */
export const statusQuery = (status: ListableStatus, f: JobFilterQuery | undefined): string => (f ? queryOf(status, f) : `status=${status}`);
