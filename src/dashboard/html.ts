/**
 * The dashboard's only way to build HTML: the `html` tag escapes every interpolated value with
 * `escapeHtml` unless it is already `SafeHtml` (a fragment built by this tag). Payloads, results,
 * errors, names and ids therefore always reach the page as text (docs/dashboard.md, Security).
 *
 * @module
 */

/** A fragment of HTML built by `html` (or `raw` for constant markup): inserted as it is. */
export class SafeHtml {
  /** @internal */
  constructor(readonly text: string) {}

  /** The markup. */
  toString(): string {
    return this.text;
  }
}

const ENTITIES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Escapes text for an HTML text node or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ENTITIES[c] ?? c);
}

/** A value a template may interpolate: text (escaped), numbers, fragments, lists of them, or nothing. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

function render(v: HtmlValue): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof SafeHtml) return v.text;
  if (Array.isArray(v)) return v.map(render).join('');
  return escapeHtml(String(v));
}

/** The template tag: constant parts as written, every value escaped (or inserted when `SafeHtml`). */
export function html(parts: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = parts[0];
  for (let i = 0; i < values.length; i++) out += render(values[i]) + parts[i + 1];
  return new SafeHtml(out);
}

/** Constant markup of this package's own (never data): inserted as it is. */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}
