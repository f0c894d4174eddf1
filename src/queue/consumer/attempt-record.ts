import { hostname } from 'node:os';

/** The stack bytes retry.lua accepts (its `stack` argument; docs/protocol.md §3, "Attempt history"). */
const MAX_STACK_BYTES = 2048;
/** The worker bytes retry.lua accepts. */
const MAX_WORKER_BYTES = 128;

/** `text` cut to at most `max` UTF-8 bytes, never inside a character. */
function cutBytes(text: string, max: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= max) return text;
  let end = max;
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--; // back to the start of the cut character
  return buf.toString('utf8', 0, end);
}

/**
 * Who runs this process's attempts, as each failed attempt's history record names it:
 * `<host name>:<pid>` (control characters dropped, at most 128 bytes). Computed once.
 */
export const WORKER = cutBytes(`${hostname()}:${process.pid}`.replace(/[\x00-\x1f\x7f]/g, ''), MAX_WORKER_BYTES);

/** The stack of what a handler threw, cut to 2048 bytes; undefined for a value that has none. */
export function errorStack(err: unknown): string | undefined {
  const stack = err instanceof Error ? err.stack : undefined;
  return typeof stack === 'string' && stack !== '' ? cutBytes(stack, MAX_STACK_BYTES) : undefined;
}
