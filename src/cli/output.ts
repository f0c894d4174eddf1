import Table from 'cli-table3';
import { EchoMqError, type EchoMqErrorCode } from '../core/errors.js';
import type { BulkReply } from '../core/wire/index.js';
import { escapeControls } from '../core/control-chars.js';

/**
 * The CLI's exit codes (docs/admin.md, "Exit codes"): scripts may rely on them.
 * 0 ok; 1 usage or bad input; 2 not found; 3 Valkey unavailable; 4 refused by the job's or
 * queue's state (e.g. retry of a job that is not dead); 5 any other failure.
 */
export const EXIT = { ok: 0, usage: 1, notFound: 2, unavailable: 3, refused: 4, failed: 5 } as const;

const UNAVAILABLE: readonly EchoMqErrorCode[] = ['EMQ_UNAVAILABLE', 'EMQ_AUTH', 'EMQ_LOADING', 'EMQ_BUSY', 'EMQ_READONLY', 'EMQ_OOM', 'EMQ_NOPERM'];

/** The exit code of an error. */
export function exitCodeOf(err: unknown): number {
  if (err instanceof CliUsageError) return EXIT.usage;
  if (err instanceof StateRefusal) return EXIT.refused;
  if (!(err instanceof EchoMqError)) return EXIT.failed;
  if (err.code === 'EMQ_NOT_FOUND') return EXIT.notFound;
  if (UNAVAILABLE.includes(err.code)) return EXIT.unavailable;
  if (err.code.startsWith('EMQ_BAD_') || err.code === 'EMQ_BATCH_TOO_LARGE') return EXIT.usage;
  return EXIT.failed;
}

/** A command line that parses but makes no sense (exit 1). */
export class CliUsageError extends Error {}

/** The operation was refused by the state of its target (exit 4): nothing was written. */
export class StateRefusal extends Error {}

/** The one-line message of an error (credentials in URLs masked, control characters escaped). */
export function errorLine(err: unknown): string {
  const text = err instanceof EchoMqError ? `${err.code} ${err.message}` : err instanceof Error ? err.message : String(err);
  return escapeControls(text.replace(/(rediss?:\/\/)[^@/\s]*@/g, '$1***@'));
}

/** Where a command writes: stdout as a table (default) or JSON (`--json`). */
export class Output {
  constructor(
    readonly json: boolean,
    private readonly write: (s: string) => void = (s) => process.stdout.write(s),
  ) {}

  /** Prints rows as a table, or `value` (default: the rows) as JSON. */
  table(head: readonly string[], rows: readonly (readonly unknown[])[], value?: unknown): void {
    if (this.json) return this.print(value ?? rows);
    const t = new Table({ head: [...head], style: { head: [], border: [] } });
    for (const r of rows) t.push(r.map(cell));
    this.write(t.toString() + '\n');
  }

  /**
   * Prints field/value rows as a two-column table, or `value` as JSON. A value longer than a cell
   * (over 80 characters once escaped) is never cut: its cell says where it is, and after the table
   * each such field is printed whole, a `<field>:` line and then the value on one line (escaped).
   */
  fields(rows: readonly (readonly [string, unknown])[], value: unknown): void {
    if (this.json) return this.print(value);
    const below: [string, string][] = [];
    const shown = rows.map(([k, v]): [string, string] => {
      const s = text(v);
      if (s.length <= CELL) return [k, s];
      below.push([text(k), s]);
      return [k, `(${s.length} characters: in full below)`];
    });
    const t = new Table({ head: ['field', 'value'], style: { head: [], border: [] } });
    for (const [k, s] of shown) t.push([cell(k), s]);
    this.write(t.toString() + '\n');
    for (const [k, s] of below) this.write(`\n${k}:\n${s}\n`);
  }

  /** Prints one line of text (control characters escaped), or `value` as JSON. */
  line(text: string, value: unknown): void {
    if (this.json) return this.print(value);
    this.write(escapeControls(text) + '\n');
  }

  /** Prints a hint line after a table (control characters escaped); nothing with `--json`. */
  note(text: string): void {
    if (!this.json) this.write(escapeControls(text) + '\n');
  }

  /** Prints a value as JSON (always). */
  print(value: unknown): void {
    this.write(JSON.stringify(value, null, 2) + '\n');
  }
}

/** The longest text a table cell shows: `table` cuts a longer one, `fields` prints it below. */
const CELL = 80;

/** A value as one line: dates as ISO text, absent values empty, control characters escaped (`\x1b`, `\n`). */
function text(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? 'invalid date' : v.toISOString(); // a planted instant never throws
  return escapeControls(typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v)));
}

/** A table cell: `text`, long text cut. */
function cell(v: unknown): string {
  const s = text(v);
  return s.length > CELL ? s.slice(0, CELL - 3) + '...' : s;
}

/** Parses a duration: `500ms`, `30s`, `15m`, `2h`, `7d` or plain milliseconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) throw new CliUsageError(`not a duration: ${JSON.stringify(text)} (use e.g. 500ms, 30s, 15m, 2h, 7d)`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] ?? 'ms'] ?? 1;
  return Number(m[1]) * unit;
}

/** Parses a positive integer option. */
export function parseCount(text: string): number {
  if (!/^\d{1,7}$/.test(text)) throw new CliUsageError(`not a count: ${JSON.stringify(text)}`);
  return Number(text);
}

/** Runs a bounded bulk call until it reports nothing more; resolves to the total. */
export async function untilDone(step: () => Promise<BulkReply>): Promise<number> {
  let total = 0;
  for (;;) {
    const r = await step();
    total += r.count;
    if (!r.more) return total;
  }
}

/** The text of an item that could not be read (`invalid name: EMQ_BAD_NAME …`, `unreadable: EMQ_WRONGTYPE …`), or undefined. */
export function problemOf(item: { readonly error?: string; readonly problem?: string }): string | undefined {
  return item.error === undefined ? undefined : `${item.problem ?? 'unreadable'}: ${item.error}`;
}
