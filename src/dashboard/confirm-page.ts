import { html, type SafeHtml } from './html.js';
import type { PageContext } from './dashboard-layout.js';

/**
 * The confirmation step of a destructive action (retry all dead, remove, cancel): what it will
 * touch, counted now, and one button (carrying `fields`, e.g. the ids it names) that posts the same action again with `confirm=yes`. A first
 * POST without it writes nothing and answers this page (docs/dashboard.md, "Destructive actions").
 */
export function confirmPage(ctx: PageContext, path: string, question: string, button: string, back: string, fields: Readonly<Record<string, string>> = {}): SafeHtml {
  const hidden = Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`);
  return html`<h1>Confirm</h1>
<p class="notice" id="confirm-question">${question}</p>
<form method="post" action="${ctx.base}${path}" id="confirm"><input type="hidden" name="_csrf" value="${ctx.csrf}"><input type="hidden" name="confirm" value="yes">${hidden}<button type="submit">${button}</button> <a href="${ctx.base}${back}">Back</a></form>`;
}
