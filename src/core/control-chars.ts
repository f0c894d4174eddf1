/**
 * Untrusted text made safe for one terminal line or one log line: control characters become
 * visible escapes, so a job's error, payload or name can neither drive the terminal (ESC
 * sequences, BEL) nor split one log event into two (newlines).
 *
 * @module
 */

const NAMED: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * C0 controls (U+0000–U+001F), DEL, C1 controls (U+0080–U+009F), the line and paragraph
 * separators (U+2028, U+2029) and the bidirectional overrides and isolates (U+202A–U+202E,
 * U+2066–U+2069).
 */
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` with every control character shown as a visible escape: `\n`, `\r`, `\t`, `\x1b` (C0,
 * DEL and C1 as `\xHH`), `\u2028` (the separators and bidi controls as `\uHHHH`). Printable
 * text, backslashes included, is unchanged.
 */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (c) => {
    const named = NAMED[c];
    if (named) return named;
    const code = c.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
