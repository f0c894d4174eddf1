import type { JobStatus, JobView } from '../queue/job.js';
import { html, type HtmlValue, type SafeHtml } from './html.js';
import { action, seg, type PageContext } from './dashboard-layout.js';
import { duration, stateBadge, when } from './badges.js';
import { escapeControls } from '../core/control-chars.js';

/** JSON as indented text (escaped by the template like any other text). */
const json = (v: unknown): string => (v === undefined ? '' : JSON.stringify(v, null, 2));

/** The statuses a Cancel button is shown for (an active job's cancel is cooperative). */
const CANCELLABLE: readonly JobStatus[] = ['pending', 'scheduled', 'waiting', 'active'];

/** The statuses of a job that has ended (a flow child can be removed only then). */
const ENDED: readonly JobStatus[] = ['done', 'dead', 'cancelled'];
/** Children listed on a parent's page (the rest are counted). */
const SHOWN_CHILDREN = 50;

/** Whether Remove can succeed: not running, not a waiting parent, not an unfinished flow child (remove.lua). */
const removable = (j: JobView): boolean => j.status !== 'active' && j.status !== 'waiting' && (!j.parent || ENDED.includes(j.status));

/** A flow parent's children: each links to its page, with its state (or outcome) and result or error. */
function childrenTable(ctx: PageContext, j: JobView): SafeHtml | undefined {
  const kids = j.children ?? [];
  if (kids.length === 0) return undefined;
  const rows = kids.slice(0, SHOWN_CHILDREN).map(
    (c) => html`<tr data-child="${c.id}"><td>${c.key}</td><td><a href="${ctx.base}/queues/${seg(c.queue)}/jobs/${seg(c.id)}">${c.id}</a></td>
<td>${c.queue}</td><td>${stateBadge(c.outcome ?? c.status ?? 'missing')}</td><td>${c.policy}</td><td>${c.outcome === 'done' ? json(c.result) : (c.error ?? '')}</td></tr>`,
  );
  const waiting = j.waitingFor === undefined ? '' : `, ${j.waitingFor} not finished`;
  const more = kids.length > SHOWN_CHILDREN ? `, first ${SHOWN_CHILDREN} shown` : '';
  return html`<h2>Children</h2><p id="children-count">${kids.length} children${waiting}${more}</p>
<table id="children"><tr><th>key</th><th>id</th><th>queue</th><th>state</th><th>policy</th><th>result / error</th></tr>${rows}</table>`;
}

/** A job's attempts, oldest first: number, start, duration, worker, outcome, error, the stack folded. */
function attemptsTable(j: JobView): SafeHtml | undefined {
  const bad = j.attemptHistoryError;
  if (j.attemptHistory.length === 0 && !bad) return undefined;
  const now = Date.now();
  const rows = j.attemptHistory.map(
    (a) => html`<tr data-attempt="${String(a.attempt)}"><td>${String(a.attempt)}</td><td>${when(a.startedAt, now) ?? 'unknown'}</td>
<td>${a.durationMs === undefined ? '' : duration(a.durationMs)}</td><td>${a.worker ?? ''}</td><td>${stateBadge(a.outcome)}</td>
<td>${a.error ?? ''}${a.stack ? html`<details><summary>stack</summary><pre>${a.stack}</pre></details>` : ''}</td></tr>`,
  );
  const unreadable = bad ? html`<div id="attempts-unreadable" class="err" data-problem="unreadable">attempt history unreadable: ${bad.message}<pre>${escapeControls(bad.raw)}</pre></div>` : '';
  return html`<h2>Attempts</h2>${unreadable}
<table id="attempts"><tr><th>#</th><th>started</th><th>duration</th><th>worker</th><th>outcome</th><th>error</th></tr>${rows}</table>`;
}

/** How long the latest attempt ran (to its end, or to now while it runs); undefined when its start is unknown. */
function runTime(j: JobView): string | undefined {
  const last = j.attemptHistory[j.attemptHistory.length - 1];
  if (!j.startedAt || !last || last.startedAt?.getTime() !== j.startedAt.getTime()) return undefined;
  if (last.durationMs !== undefined) return duration(last.durationMs);
  return last.outcome === 'running' ? `${duration(Date.now() - j.startedAt.getTime())} so far` : undefined;
}

/** A field row, or nothing when the value is absent. */
function field(name: string, value: HtmlValue): SafeHtml | undefined {
  if (value === undefined || value === '') return undefined;
  return html`<tr><th>${name}</th><td data-field="${name}">${value}</td></tr>`;
}

/** A job's detail: row, attempts, payload, result, error, progress, checkpoint, log; retry/promote/cancel/remove. */
export function jobPage(ctx: PageContext, j: JobView, notice?: SafeHtml): SafeHtml {
  const q = `/queues/${seg(j.queue)}`;
  const path = `${q}/jobs/${seg(j.id)}`;
  const buttons = [
    j.status === 'dead' ? action(ctx, `${path}/retry`, 'Retry') : undefined,
    j.status === 'scheduled' ? action(ctx, `${path}/promote`, 'Run now') : undefined,
    CANCELLABLE.includes(j.status) && !j.cancelRequested ? action(ctx, `${path}/cancel`, j.status === 'active' ? 'Cancel (cooperative)…' : 'Cancel…') : undefined,
    removable(j) ? action(ctx, `${path}/remove`, 'Remove…') : undefined, // both ask on a confirmation page first
  ];
  const pre = (v: string): SafeHtml | undefined => (v ? html`<pre>${v}</pre>` : undefined);
  const payload = j.payloadError ? j.payloadError.raw : json(j.payload);
  const result = j.resultError ? j.resultError.raw : json(j.result);
  return html`<p><a href="${ctx.base}/">Queues</a> / <a href="${ctx.base}${q}">${j.queue}</a></p>
<h1>Job ${j.id}</h1>${notice ?? ''}<p>${buttons}</p>
<table id="job" data-live>
${field('status', stateBadge(j.status))}
${field('name', j.name)}
${field('business id', j.ref)}
${field('parent', j.parent ? html`<a id="parent" href="${ctx.base}/queues/${seg(j.parent.queue)}/jobs/${seg(j.parent.id)}">${j.parent.id}</a> (queue ${j.parent.queue})` : undefined)}
${field('attempts', j.maxAttempts === undefined ? String(j.attempts) : `${j.attempts} of ${j.maxAttempts}`)}
${field('created', when(j.createdAt))}
${field('started', when(j.startedAt))}
${field('ran', runTime(j))}
${field('finished', when(j.finishedAt))}
${field('cancel requested', j.cancelRequested ? 'yes' : undefined)}
${field('error', pre(j.error ?? ''))}
${field('payload', pre(payload))}
${field('result', pre(result))}
${field('progress', pre(json(j.progress)))}
${field('checkpoint', pre(json(j.checkpoint)))}
${field('log', j.logs.length ? pre(j.logs.join('\n')) : undefined)}
</table>${attemptsTable(j) ?? ''}${childrenTable(ctx, j) ?? ''}`;
}

/** A job whose data cannot be read (a row of another type, …): its id and why, no buttons. */
export function unreadableJobPage(ctx: PageContext, queue: string, id: string, error: string): SafeHtml {
  return html`<p><a href="${ctx.base}/">Queues</a> / <a href="${ctx.base}/queues/${seg(queue)}">${queue}</a></p>
<h1>Job ${id}</h1>
<table id="job" data-live><tr><th>status</th><td data-field="status" class="err" data-problem="unreadable">unreadable: ${error}</td></tr></table>`;
}
