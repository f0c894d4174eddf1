import type { QueueInfo } from '../admin/queue-admin.js';
import { stateBadge } from './badges.js';
import { action, seg, type PageContext } from './dashboard-layout.js';
import { html, type SafeHtml } from './html.js';

/**
 * A queue's paused lanes (`pauseLane`): each lane name with a `paused` badge and, unless
 * read-only, its Resume-lane button; then a form that pauses a lane by name.
 */
export function lanesSection(ctx: PageContext, info: QueueInfo): SafeHtml {
  const q = `/queues/${seg(info.name)}`;
  const lanes = info.pausedLanes.map((lane) => html`<li data-lane="${lane}">${lane} ${stateBadge('paused')} ${action(ctx, `${q}/lanes/${seg(lane)}/resume`, 'Resume lane')}</li>`);
  const form = ctx.readOnly
    ? ''
    : html`<form class="inline" method="post" action="${ctx.base}${q}/lanes/pause" id="pause-lane"><input type="hidden" name="_csrf" value="${ctx.csrf}"><label>Lane <input name="lane" size="20" required maxlength="100"></label> <button type="submit">Pause lane</button></form>`;
  return html`<div id="lanes">${info.pausedLanes.length ? html`<p>Paused lanes:</p><ul id="paused-lanes">${lanes}</ul>` : ''}${form}</div>`;
}
