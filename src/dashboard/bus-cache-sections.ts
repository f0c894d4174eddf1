import type { GroupInfo, TopicInfo } from '../admin/bus-admin.js';
import type { CacheAdminStats } from '../admin/cache-admin.js';
import type { CacheStats } from '../cache/cache-types.js';
import { html, type SafeHtml } from './html.js';
import { seg, type PageContext } from './dashboard-layout.js';
import { problemCell, shownName } from './entry-rows.js';
import { when } from './badges.js';

/** A topic with its consumer groups. */
export interface TopicWithGroups {
  /** The topic's figures. */
  readonly topic: TopicInfo;
  /** Its groups with lag and pending counts. */
  readonly groups: readonly GroupInfo[];
}

/** The Bus page: one page of the known topics with log length, dead letters and each group's lag and pending. */
export function busSection(ctx: PageContext, topics: readonly TopicWithGroups[], next: string | undefined): SafeHtml {
  if (!topics.length) return html`<h1>Bus</h1><p>No topic has announced itself yet.</p>`;
  const rows = topics.map(({ topic: t, groups }) => {
    if (t.error) return html`<tr data-topic="${shownName(t.name)}"><td>${shownName(t.name)}</td>${problemCell(t, 6)}</tr>`;
    const span = Math.max(1, groups.length);
    const first = groups[0];
    const cells = (g?: GroupInfo): SafeHtml =>
      g ? html`<td>${g.name}</td><td class="n" data-lag>${g.lag ?? 'unknown'}</td><td class="n">${g.pending}</td><td class="n">${g.consumers}</td>` : html`<td colspan="4">no groups</td>`;
    return html`<tr data-topic="${t.name}"><td rowspan="${span}">${t.name}</td><td class="n" rowspan="${span}">${t.length}</td><td class="n" rowspan="${span}"><a href="${ctx.base}/bus/${seg(t.name)}/dead-letters" data-dead-link>${t.deadLetters}</a></td>${cells(first)}</tr>
${groups.slice(1).map((g) => html`<tr>${cells(g)}</tr>`)}`;
  });
  return html`<h1>Bus</h1><table id="bus" data-live><thead><tr><th>topic</th><th>events</th><th>dead letters</th><th>group</th><th>lag</th><th>pending</th><th>consumers</th></tr></thead>
<tbody>${rows}</tbody></table>${memoryTable(topics)}${next ? html`<p><a href="${ctx.base}/bus?after=${seg(next)}">Next topics →</a></p>` : ''}`;
}

/** Bytes as KiB / MiB text; `~` marks an estimate. */
const size = (n: number | undefined, estimate?: boolean): string =>
  n === undefined ? 'uncounted' : `${estimate ? '~' : ''}${n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`}`;

/** What each topic's log and archive hold in Valkey (docs/bus.md, "Retention and the archive"). */
function memoryTable(topics: readonly TopicWithGroups[]): SafeHtml {
  const rows = topics
    .filter(({ topic: t }) => !t.error)
    .map(
      ({ topic: t }) =>
        html`<tr data-topic-memory="${t.name}"><td>${t.name}</td><td class="n" data-log-bytes>${size(t.logBytes, t.logBytesEstimated)}</td><td class="n" data-archive-segments>${t.archiveSegments ?? 0}</td><td class="n" data-archive-bytes>${t.archiveSegments ? size(t.archiveBytes) : '0'}</td></tr>`,
    );
  return html`<h2>Memory</h2><table id="bus-memory" data-live><thead><tr><th>topic</th><th>log bytes</th><th>archive segments</th><th>archive bytes</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** The Cache page: one page of namespaces with invalidation figures, and this process's counters when they mean something. */
export function cacheSection(ctx: PageContext, stats: CacheAdminStats, processStats: CacheStats | undefined): SafeHtml {
  const names = stats.items;
  const ns = names.length
    ? html`<table id="caches" data-live><thead><tr><th>namespace</th><th>invalidations</th><th>retained</th><th>last invalidation</th></tr></thead><tbody>${names.map(
        (n) =>
          n.error
            ? html`<tr data-namespace="${shownName(n.name)}"><td>${shownName(n.name)}</td>${problemCell(n, 3)}</tr>`
            : html`<tr data-namespace="${n.name}"><td>${n.name}</td><td class="n">${n.invalidations}</td><td class="n">${n.retained}</td><td>${when(n.lastInvalidationAt)}</td></tr>`,
      )}</tbody></table>`
    : html`<p>No cache namespace has announced itself yet.</p>`;
  const own = processStats
    ? html`<h2>Cache counters (this process)</h2><table id="cache" data-live>${Object.entries(processStats).map(([k, v]) => html`<tr><th>${k}</th><td class="n" data-stat="${k}">${v}</td></tr>`)}</table>`
    : '';
  const next = stats.next ? html`<p><a href="${ctx.base}/cache?after=${seg(stats.next)}">Next namespaces →</a></p>` : '';
  return html`<h1>Cache</h1>${ns}${next}${own}`;
}
