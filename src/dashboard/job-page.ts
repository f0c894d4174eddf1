import type { JobStatus, JobView } from '../queue/job.js';
import { html, type HtmlValue, type SafeHtml } from './html.js';
import { action, seg, type PageContext } from './dashboard-layout.js';
import { iso } from './entry-rows.js';

/** JSON as indented text (escaped by the template like any other text). */
const json = (v: unknown): string => (v === undefined ? '' : JSON.stringify(v, null, 2));

/** The statuses a Cancel button is shown for (an active job's cancel is cooperative). */
const CANCELLABLE: readonly JobStatus[] = ['pending', 'scheduled', 'waiting', 'active'];

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
    j.status !== 'active' ? action(ctx, `${path}/remove`, 'Remove…') : undefined, // both ask on a confirmation page first
  ];
  const pre = (v: string): SafeHtml | undefined => (v ? html`<pre>${v}</pre>` : undefined);
  const payload = j.payloadError ? j.payloadError.raw : json(j.payload);
  const result = j.resultError ? j.resultError.raw : json(j.result);
  return html`<p><a href="${ctx.base}/">Queues</a> / <a href="${ctx.base}${q}">${j.queue}</a></p>
<h1>Job ${j.id}</h1>${notice ?? ''}<p>${buttons}</p>
<table id="job" data-live>
${field('status', j.status)}
${field('attempts', j.maxAttempts === undefined ? String(j.attempts) : `${j.attempts} of ${j.maxAttempts}`)}
${field('created', iso(j.createdAt))}
${field('finished', iso(j.finishedAt))}
${field('cancel requested', j.cancelRequested ? 'yes' : undefined)}
${field('error', pre(j.error ?? ''))}
${field('payload', pre(payload))}
${field('result', pre(result))}
${field('progress', pre(json(j.progress)))}
${field('checkpoint', pre(json(j.checkpoint)))}
${field('log', j.logs.length ? pre(j.logs.join('\n')) : undefined)}
</table>`;
}

/** A job whose data cannot be read (a row of another type, …): its id and why, no buttons. */
export function unreadableJobPage(ctx: PageContext, queue: string, id: string, error: string): SafeHtml {
  return html`<p><a href="${ctx.base}/">Queues</a> / <a href="${ctx.base}/queues/${seg(queue)}">${queue}</a></p>
<h1>Job ${id}</h1>
<table id="job" data-live><tr><th>status</th><td data-field="status" class="err" data-problem="unreadable">unreadable: ${error}</td></tr></table>`;
}
