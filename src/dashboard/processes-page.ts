import type { ProcessList, ProcessView } from '../admin/processes.js';
import { when } from './badges.js';
import { seg, type PageContext } from './dashboard-layout.js';
import { shownName as t } from './entry-rows.js';
import { html, type SafeHtml } from './html.js';

/** The palette class of each state (the layout's `.st-*` colours): live as active, gone as cancelled, unreadable as missing. */
const COLOUR: Readonly<Record<ProcessView['state'], string>> = { live: 'st st-active', gone: 'st st-cancelled', unreadable: 'st st-missing' };

/** The badge of a process entry, in the state colours of every page. */
function badge(p: ProcessView): SafeHtml {
  return html`<span class="${COLOUR[p.state]}" data-process-state="${p.state}">${p.state}</span>`;
}

/** One row: host, pid, runtime/version, started, last heartbeat, queues, Bus groups, roles. */
function row(ctx: PageContext, p: ProcessView, now: number): SafeHtml {
  const i = p.info;
  if (p.state === 'unreadable') {
    return html`<tr data-node="${p.node}" data-state="unreadable"><td class="n">${p.node < 0 ? '' : p.node}</td><td>${badge(p)}</td><td colspan="8"><span class="err" data-problem="unreadable">unreadable (field ${t(p.field ?? '')}): ${t(p.error ?? '')}</span></td></tr>`;
  }
  const queues = i?.queues.map((q, k) => html`${k ? ', ' : ''}<a href="${ctx.base}/queues/${seg(q.name)}">${t(q.name)}</a> <span class="n" title="active / concurrency">${q.active}/${q.concurrency}</span>`);
  const groups = i?.groups.map((g, k) => html`${k ? ', ' : ''}${t(g.topic)}/${t(g.group)} <span title="consumer">${t(g.consumer)}</span> ×${g.concurrency}`);
  return html`<tr data-node="${p.node}" data-state="${p.state}" data-pid="${i?.pid ?? ''}"><td class="n">${p.node}</td><td>${badge(p)}</td>
<td>${i ? t(i.host) : html`<span title="a live lease of a process that does not describe itself">(no description)</span>`}</td><td class="n">${i?.pid ?? ''}</td>
<td>${i ? t(`${i.runtime} / ${i.version}`) : ''}</td><td>${i ? when(new Date(i.started), now) : ''}</td><td>${when(p.heartbeatAt, now)}</td>
<td>${queues ?? ''}</td><td>${groups ?? ''}</td><td>${t(i?.roles.join(', ') ?? '')}${i?.truncated ? ' (truncated)' : ''}</td></tr>`;
}

/**
 * The processes page (docs/dashboard.md "Processes"): every EchoMQ process that describes itself
 * on its node-lease renewals, with what it runs and its last heartbeat (server clock), live;
 * ended leases shown as gone, malformed entries as unreadable.
 */
export function processesPage(ctx: PageContext, list: ProcessList): SafeHtml {
  const now = list.now.getTime();
  return html`<h1>Processes</h1>
<div id="processes-live" data-live><p id="process-counts">${list.live} live · ${list.gone} gone (lease over: stopped or crashed) · ${list.unreadable} unreadable</p>
${list.error ? html`<p class="notice err" id="processes-unreadable">${list.error}</p>` : ''}
<table id="processes"><thead><tr><th>node</th><th>state</th><th>host</th><th>pid</th><th>runtime / version</th><th>started</th><th>last heartbeat</th><th>queues (active/concurrency)</th><th>Bus groups</th><th>roles</th></tr></thead>
<tbody>${list.items.map((p) => row(ctx, p, now))}</tbody></table>${list.items.length ? '' : html`<p>No process describes itself.</p>`}</div>
<p>From the node-lease renewals every process sends (every 15 s by default); a process whose lease ran out is gone, never live.</p>`;
}
