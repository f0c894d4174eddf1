import type { EntryProblem } from '../admin/registry.js';
import { EchoMqError } from '../core/errors.js';
import { describeError } from '../core/reply-errors.js';
import { echoMqErrorReply } from '../nest/exception-filter.js';
import { html, type SafeHtml } from './html.js';

/** The longest name a page shows whole (a planted registry entry may be any size). */
const SHOWN_NAME = 200;

/** A name as a page shows it: at most 200 characters, then "… (n characters)"; control characters escaped. */
export function shownName(name: string): string {
  const cut = name.length <= SHOWN_NAME ? name : `${name.slice(0, SHOWN_NAME)}… (${name.length} characters)`;
  // Control characters shown as escapes (`\u001b`), as the error text shows them.
  // eslint-disable-next-line no-control-regex
  return cut.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The text of an entry that could not be read: `invalid name: EMQ_BAD_NAME …` or `unreadable: EMQ_WRONGTYPE …`. */
export function problemText(item: { readonly error?: string; readonly problem?: EntryProblem }): string {
  return `${item.problem ?? 'unreadable'}: ${item.error ?? ''}`;
}

/** The cell of an entry that could not be read, spanning `span` columns. */
export function problemCell(item: { readonly error?: string; readonly problem?: EntryProblem }, span: number): SafeHtml {
  return html`<td colspan="${span}" class="err" data-problem="${item.problem ?? 'unreadable'}">${problemText(item)}</td>`;
}

/** A read that may fail as the data's fault: its value, or the one-line text of why it could not be read. */
export type ReadOutcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

/**
 * Settles a read of one queue's or job's data for a page: bad input (4xx: an unknown queue, a
 * malformed id or cursor) and an outage (503) still reject, to be answered with their error
 * page; anything else (a key of another type, a row that does not decode, a key the ACL user may
 * not read) resolves to its text, so the page is served and shows what could not be read.
 */
export async function readOutcome<T>(read: Promise<T>): Promise<ReadOutcome<T>> {
  try {
    return { ok: true, value: await read };
  } catch (err) {
    if (err instanceof EchoMqError && echoMqErrorReply(err).status !== 500) throw err;
    return { ok: false, error: describeError(err) };
  }
}
