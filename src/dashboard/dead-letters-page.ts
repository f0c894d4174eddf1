import type { BusAdmin } from '../admin/bus-admin.js';
import type { DeadLetterEntry, DeadLetterPage } from '../admin/dead-letter-pages.js';
import { InvalidOptionError } from '../core/errors.js';
import { html, type SafeHtml } from './html.js';
import { when } from './badges.js';
import { seg, type PageContext } from './dashboard-layout.js';
import { readOutcome, shownName } from './entry-rows.js';

/**
 * The Bus dead-letter pages (docs/dashboard.md, "Bus dead letters"): a topic's dead letters newest
 * first with cursor pages (of one group with `?group=`), one dead letter whole, and the replay
 * and purge actions (each entry, or every entry shown), which ask on a confirmation page first.
 *
 * @module
 */

/** Most dead letters one page shows (and one "replay all shown" touches). */
export const DEAD_PAGE = 50;
/** Longest payload preview in the list (the entry's own page shows it whole). */
const PREVIEW = 80;
const DEAD_ID = /^\d{1,20}-\d{1,20}$/;
const GROUP = /^[A-Za-z0-9_.-]{1,100}$/;

/** A page's route: the list (`/bus/<topic>/dead-letters`) or one entry (`…/<deadId>`). */
export type DeadLetterRoute = { readonly topic: string; readonly deadId?: string };

/** The dead-letter route of a GET's path parts, or undefined when it is not one. */
export function deadLetterRoute(parts: readonly string[]): DeadLetterRoute | undefined {
  if (parts[0] !== 'bus' || parts[2] !== 'dead-letters' || parts.length < 3 || parts.length > 4) return undefined;
  return { topic: parts[1], deadId: parts[3] };
}

/** The `group` of a query or form: a group name, or undefined for all groups; anything else is bad input. */
export function groupParam(v: unknown): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string' || !GROUP.test(v)) throw new InvalidOptionError('group must be a group name (1..100 of A-Z a-z 0-9 _ . -)');
  return v;
}

/** The dead ids a POST names (`ids`, space- or comma-separated, 1..50 of them). */
export function deadIdsParam(v: unknown): string[] {
  const ids = typeof v === 'string' ? v.split(/[\s,]+/).filter(Boolean) : [];
  if (ids.length < 1 || ids.length > DEAD_PAGE || ids.some((id) => !DEAD_ID.test(id))) throw new InvalidOptionError(`ids must be 1..${DEAD_PAGE} dead-letter ids (<ms>-<seq>)`);
  return [...new Set(ids)];
}

/** The base path of a topic's dead letters. */
export const deadPath = (topic: string): string => `/bus/${seg(topic)}/dead-letters`;

/** A POST button carrying dead ids (and the group shown, to come back to); nothing when read-only. */
function idsButton(ctx: PageContext, topic: string, verb: 'replay' | 'purge', ids: readonly string[], label: string, group: string | undefined, id?: string): SafeHtml | undefined {
  if (ctx.readOnly || ids.length === 0) return undefined;
  return html`<form class="inline" method="post" action="${ctx.base}${deadPath(topic)}/${verb}"${id ? html` id="${id}"` : ''}><input type="hidden" name="_csrf" value="${ctx.csrf}"><input type="hidden" name="ids" value="${ids.join(' ')}">${
    group ? html`<input type="hidden" name="group" value="${group}">` : ''
  }<button type="submit">${label}</button></form>`;
}

/** A payload's text as a list cell shows it: control characters escaped, cut at 80 characters. */
const preview = (e: DeadLetterEntry): string => (e.payloadText === undefined ? '(none)' : shownName(e.payloadText.length > PREVIEW ? `${e.payloadText.slice(0, PREVIEW)}…` : e.payloadText));

/** One page of a topic's dead letters (of one group when `group`), newest first, with replay and purge. */
export function deadLettersPage(ctx: PageContext, topic: string, group: string | undefined, page: DeadLetterPage, paged: boolean, notice?: SafeHtml): SafeHtml {
  const base = deadPath(topic);
  const g = group ? `group=${seg(group)}&` : '';
  const rows = page.entries.map(
    (e) => html`<tr data-dead="${e.deadId}"><td><a href="${ctx.base}${base}/${seg(e.deadId)}">${e.deadId}</a></td><td>${e.id}</td><td><a href="${ctx.base}${base}?group=${seg(e.group)}">${shownName(e.group)}</a></td>
<td>${when(e.at)}</td><td class="n">${e.deliveries}</td><td>${shownName(e.error)}</td><td><pre class="preview">${preview(e)}</pre></td><td>${idsButton(ctx, topic, 'replay', [e.deadId], 'Replay…', group)}</td></tr>`,
  );
  const ids = page.entries.map((e) => e.deadId);
  const pager = [
    paged ? html`<a href="${ctx.base}${base}${group ? html`?group=${seg(group)}` : ''}">← Newest</a> ` : '',
    page.next ? html`<a id="next" href="${ctx.base}${base}?${g}cursor=${seg(page.next)}">Older →</a>` : '',
  ];
  return html`<p><a href="${ctx.base}/bus">Bus</a></p>
<h1>Dead letters of ${topic}${group ? html` · group ${group}` : ''}</h1>${notice ?? ''}
<p>Replay publishes an entry to the topic again as a new event: every group of the topic receives it (not only the group that gave up), and the dead letter is deleted.</p>
<p>${idsButton(ctx, topic, 'replay', ids, `Replay all shown (${ids.length})…`, group, 'replay-shown')}${idsButton(ctx, topic, 'purge', ids, `Purge all shown (${ids.length})…`, group, 'purge-shown')}${
    group ? html` <a href="${ctx.base}${base}">All groups</a>` : ''
  }</p>
<table id="dead-letters"><thead><tr><th>dead id</th><th>event</th><th>group</th><th>dead-lettered</th><th>deliveries</th><th>error</th><th>payload</th><th></th></tr></thead><tbody>${rows}</tbody></table>
${page.entries.length ? '' : html`<p>No dead letters${group ? ' of this group' : ''}${paged ? ' on this page' : ''}.</p>`}<p>${pager} <span id="dead-examined">${page.examined} dead letter(s) examined for this page.</span></p>`;
}

/** One dead letter whole: its fields, error and payload (pretty JSON when it is JSON, else the text as stored). */
export function deadLetterView(ctx: PageContext, topic: string, e: DeadLetterEntry, notice?: SafeHtml): SafeHtml {
  const payload = e.payload !== undefined ? JSON.stringify(e.payload, null, 2) : (e.payloadText ?? '(none)');
  return html`<p><a href="${ctx.base}/bus">Bus</a> · <a href="${ctx.base}${deadPath(topic)}">Dead letters of ${topic}</a></p>
<h1>Dead letter ${e.deadId}</h1>${notice ?? ''}
<table id="dead-letter"><tr><th>event</th><td>${e.id}</td></tr><tr><th>group</th><td>${shownName(e.group)}</td></tr><tr><th>consumer</th><td>${shownName(e.consumer)}</td></tr>
<tr><th>dead-lettered</th><td>${when(e.at)}</td></tr><tr><th>deliveries</th><td class="n">${e.deliveries}</td></tr><tr><th>error</th><td>${shownName(e.error)}</td></tr></table>
<p>${idsButton(ctx, topic, 'replay', [e.deadId], 'Replay…', undefined)}${idsButton(ctx, topic, 'purge', [e.deadId], 'Purge…', undefined)}</p>
<h2>Payload${e.payload === undefined && e.payloadText !== undefined ? ' (not JSON: as stored)' : ''}</h2><pre id="payload">${payload}</pre>`;
}

/** The GET of a dead-letter route: the list (`?group=`, `?cursor=`) or one entry. */
export async function deadLettersGet(ctx: PageContext, bus: BusAdmin, r: DeadLetterRoute, query: URLSearchParams, notice?: SafeHtml): Promise<{ title: string; body: SafeHtml }> {
  // Data that cannot be read (a dead key of another type) is shown as such, never a 500 (entry-rows.ts).
  const unreadable = (error: string): SafeHtml => html`<p><a href="${ctx.base}/bus">Bus</a></p><h1>Dead letters of ${r.topic}</h1><p class="notice err" id="dead-unreadable">dead letters unreadable: ${error}</p>`;
  if (r.deadId !== undefined) {
    const one = await readOutcome(bus.deadLetter(r.topic, r.deadId));
    return { title: `Dead letter ${r.deadId}`, body: one.ok ? deadLetterView(ctx, r.topic, one.value, notice) : unreadable(one.error) };
  }
  const group = groupParam(query.get('group') ?? undefined);
  const cursor = query.get('cursor') ?? undefined;
  const page = await readOutcome(bus.deadLetterPage(r.topic, { group, cursor, limit: DEAD_PAGE }));
  return { title: `Dead letters of ${r.topic}`, body: page.ok ? deadLettersPage(ctx, r.topic, group, page.value, cursor !== undefined, notice) : unreadable(page.error) };
}

/** What a dead-letter POST answers: a confirmation to ask, or where to go with which notice. */
export type DeadLetterPostOutcome = { readonly ask: { path: string; question: string; button: string; back: string; fields: Record<string, string> } } | { readonly to: string; readonly notice: string };

/**
 * A dead-letter POST (`/bus/<topic>/dead-letters/replay|purge`, form `ids`, optional `group`):
 * without `confirm=yes` it only reads (the entries that still exist, and their groups) and asks;
 * with it, it replays or purges those ids and says so.
 */
export async function deadLettersPost(bus: BusAdmin, parts: readonly string[], form: Readonly<Record<string, unknown>>): Promise<DeadLetterPostOutcome | undefined> {
  const [root, topic, sub, verb] = parts;
  if (parts.length !== 4 || root !== 'bus' || sub !== 'dead-letters' || (verb !== 'replay' && verb !== 'purge')) return undefined;
  const ids = deadIdsParam(form.ids);
  const group = groupParam(form.group);
  const back = `${deadPath(topic)}${group ? `?group=${seg(group)}` : ''}`;
  if (form.confirm !== 'yes') {
    const found = (await Promise.all(ids.map((id) => bus.deadLetter(topic, id).catch(() => undefined)))).filter((e): e is DeadLetterEntry => e !== undefined);
    if (found.length === 0) return { to: back, notice: 'dead-gone' };
    const groups = [...new Set(found.map((e) => shownName(e.group)))].join(', ');
    const what = `${found.length} dead letter(s) of topic ${topic} (group ${groups}; ${found.map((e) => e.deadId).join(', ')})`;
    const question =
      verb === 'replay'
        ? `Replay ${what}? Each is published to the topic again as a new event: every group of the topic receives it, not only ${groups}. The dead letters are deleted.`
        : `Purge ${what}? They are deleted; this cannot be undone.`;
    const fields: Record<string, string> = { ids: found.map((e) => e.deadId).join(' '), ...(group ? { group } : {}) };
    return { ask: { path: `${deadPath(topic)}/${verb}`, question, button: `${verb === 'replay' ? 'Replay' : 'Purge'} ${found.length} dead letter(s)`, back, fields } };
  }
  const r = verb === 'replay' ? await bus.replayDead(topic, { ids, limit: ids.length }) : await bus.purgeDead(topic, { ids, limit: ids.length });
  return { to: back, notice: r.count === 0 ? 'dead-gone' : verb === 'replay' ? 'dead-replayed' : 'dead-purged' };
}
