import { html, raw, type SafeHtml } from './html.js';

/** What every page is rendered with. */
export interface PageContext {
  /** The mount's URL path as the browser sees it, without a trailing slash (`''` at the root). */
  readonly base: string;
  /** This response's CSP nonce (for its one `<style>` and one `<script>`). */
  readonly nonce: string;
  /** The process's CSRF token, put into every form. */
  readonly csrf: string;
  /** True when mutations are off (no buttons are rendered). */
  readonly readOnly: boolean;
  /** Live refresh period of `[data-live]` regions, ms (0 = off). */
  readonly refreshMs: number;
  /** The pages beside the queues this dashboard has (their admin surfaces are available). */
  readonly sections: readonly ('bus' | 'cache')[];
}

const STYLE = raw(`
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2733;background:#fff}
header{background:#1d2733;color:#fff;padding:10px 20px}header a{color:#fff;text-decoration:none;font-weight:600}
main{padding:16px 20px;max-width:1200px}h1{font-size:20px;margin:8px 0 12px}h2{font-size:16px;margin:20px 0 8px}
table{border-collapse:collapse;margin:4px 0 12px}th,td{border-bottom:1px solid #e3e8ee;padding:4px 10px;text-align:left;vertical-align:top}
th{background:#f3f6f9;font-weight:600}td:first-child{white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f7f9fb;border:1px solid #e3e8ee;padding:8px;max-width:100%;overflow:auto;white-space:pre-wrap;word-break:break-all}
.tabs a{margin-right:12px}.tabs a.on{font-weight:700;text-decoration:none;color:#1d2733}
.notice{background:#eef7ee;border:1px solid #b9dfb9;padding:6px 10px}.err{background:#fbeeee;border-color:#e6b5b5}
.paused{background:#f9e79f;padding:1px 6px;border-radius:3px}form.inline{display:inline;margin:0 4px 0 0}
button{font:inherit;padding:2px 10px;cursor:pointer}time{border-bottom:1px dotted #9aa7b4;cursor:help}
.st{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;line-height:18px;background:#e3e8ee;color:#1d2733}
.st-pending{background:#dbe9fb;color:#174a83}.st-scheduled{background:#ece3fa;color:#4d2a86}.st-active{background:#fdf0cf;color:#7a5300}
.st-waiting{background:#e0f3f5;color:#0d5c66}.st-done{background:#dcf2e0;color:#1d6b32}.st-dead,.st-failed{background:#fbdddd;color:#8f1f1f}
.st-cancelled{background:#eceff2;color:#4b5866}.st-paused{background:#f9e79f;color:#6b5800}.st-missing{background:#fff;color:#8f1f1f;border:1px dashed #c0392b}figure.chart{margin:0}figcaption{font-size:12px;color:#5d6b7a}
`);

/** The live-refresh script: swaps each `[data-live]` region for the same region of a fresh copy of the page's content (parsed, never executed; the server sends no shell, style or script for it), and asks before `[data-confirm]` forms. */
const SCRIPT = `(() => {
  for (const f of document.querySelectorAll('form[data-confirm]')) f.addEventListener('submit', (e) => { if (!confirm(f.dataset.confirm)) e.preventDefault(); });
  const every = Number(document.body.dataset.refresh);
  if (!every || !document.querySelector('[data-live]')) return;
  let busy = false;
  setInterval(async () => {
    if (busy || document.hidden) return;
    busy = true;
    try {
      const r = await fetch(location.href, { credentials: 'same-origin', headers: { 'x-echomq-live': '1' } });
      if (!r.ok) return;
      const fresh = new DOMParser().parseFromString(await r.text(), 'text/html');
      for (const el of document.querySelectorAll('[data-live]')) {
        const next = fresh.getElementById(el.id);
        if (next) el.replaceWith(document.importNode(next, true));
      }
    } catch {} finally { busy = false; }
  }, every);
})();`;

/** A whole page: the shell with its nonce-bound style and script around `body`. */
export function page(ctx: PageContext, title: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="same-origin"><title>${title} · EchoMQ</title><style nonce="${ctx.nonce}">${STYLE}</style></head>
<body data-refresh="${ctx.refreshMs}"><header><a href="${ctx.base}/">EchoMQ</a> · <a href="${ctx.base}/">Queues</a> · <a href="${ctx.base}/processes">Processes</a>${ctx.sections.map((s) => html` · <a href="${ctx.base}/${s}">${s === 'bus' ? 'Bus' : 'Cache'}</a>`)}${ctx.readOnly ? ' · read-only' : ''}</header>
<main>${body}</main><script nonce="${ctx.nonce}">${raw(SCRIPT)}</script></body></html>`.text;
}

/** A POST button (a one-button form carrying the CSRF token); nothing when read-only. */
export function action(ctx: PageContext, path: string, label: string, confirmText?: string): SafeHtml | undefined {
  if (ctx.readOnly) return undefined;
  return html`<form class="inline" method="post" action="${ctx.base}${path}"${confirmText ? html` data-confirm="${confirmText}"` : ''}><input type="hidden" name="_csrf" value="${ctx.csrf}"><button type="submit">${label}</button></form>`;
}

/** The page of an error: its status and message as text. */
export function errorPage(ctx: PageContext, status: number, reason: string, message: string): string {
  return page(ctx, `${status} ${reason}`, html`<h1>${status} ${reason}</h1><p class="notice err" id="error">${message}</p><p><a href="${ctx.base}/">Back to the queues</a></p>`);
}

/** A URL path segment (names and ids are percent-encoded into links). */
export const seg = (s: string): string => encodeURIComponent(s);
