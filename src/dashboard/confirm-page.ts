import { html, type SafeHtml } from './html.js';
import type { PageContext } from './dashboard-layout.js';

/**
 * The confirmation step of a destructive action (retry all dead, remove, cancel): what it will
 * touch, counted now, and one button that posts the same action again with `confirm=yes`. A first
 * POST without it writes nothing and answers this page (docs/dashboard.md, "Destructive actions").
 */
export function confirmPage(ctx: PageContext, path: string, question: string, button: string, back: string): SafeHtml {
  return html`<h1>Confirm</h1>
<p class="notice" id="confirm-question">${question}</p>
<form method="post" action="${ctx.base}${path}" id="confirm"><input type="hidden" name="_csrf" value="${ctx.csrf}"><input type="hidden" name="confirm" value="yes"><button type="submit">${button}</button> <a href="${ctx.base}${back}">Back</a></form>`;
}
