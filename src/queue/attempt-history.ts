import type { AttemptView, UndecodedText } from './job.js';

/** The attempts of a job row, and why its stored history did not decode (when it did not). */
export interface RowAttempts {
  /** Oldest first: the recorded attempts, then the running or completed one. */
  readonly attemptHistory: readonly AttemptView[];
  /** When the latest attempt started (the row's `started`). */
  readonly startedAt?: Date;
  /** The row's `hist` text, when it is not a sequence of records. */
  readonly attemptHistoryError?: UndecodedText;
}

/** Fields of a record, in order (docs/protocol.md §3, "Attempt history"); a record may carry more. */
const FIELDS = 7;

/** An epoch-ms text as a date; undefined for none or text that is not digits. */
function instant(text: string | undefined): Date | undefined {
  return text !== undefined && /^\d{1,16}$/.test(text) ? new Date(Number(text)) : undefined;
}

/** Reads `<n>:` at `pos` of `buf`: n and where its bytes start; undefined when not there. */
function lengthAt(buf: Buffer, pos: number, end: number): { n: number; at: number } | undefined {
  let i = pos;
  while (i < end && i - pos < 7 && buf[i] >= 0x30 && buf[i] <= 0x39) i++;
  if (i === pos || i >= end || buf[i] !== 0x3a) return undefined;
  const n = Number(buf.toString('latin1', pos, i));
  return i + 1 + n <= end ? { n, at: i + 1 } : undefined;
}

/** One record's body as an attempt; undefined when it is not seven length-prefixed fields. */
function record(buf: Buffer, start: number, end: number): AttemptView | undefined {
  const f: string[] = [];
  let pos = start;
  while (f.length < FIELDS) {
    const len = lengthAt(buf, pos, end);
    if (!len) return undefined;
    f.push(buf.toString('utf8', len.at, len.at + len.n));
    pos = len.at + len.n;
  }
  const [attempt, started, ended, outcome, worker, error, stack] = f;
  if (!/^\d{1,7}$/.test(attempt) || (started !== '' && !instant(started)) || !instant(ended) || outcome === '') return undefined;
  return attemptView(Number(attempt), instant(started), instant(ended), outcome, worker, error, stack);
}

/** An attempt view, with its duration when both ends are known and empty texts left out. */
function attemptView(attempt: number, startedAt: Date | undefined, endedAt: Date | undefined, outcome: string, worker?: string, error?: string, stack?: string): AttemptView {
  const durationMs = startedAt && endedAt ? Math.max(0, endedAt.getTime() - startedAt.getTime()) : undefined;
  return { attempt, startedAt, endedAt, durationMs, worker: worker || undefined, outcome, error: error || undefined, stack: stack || undefined };
}

/**
 * Decodes a row's attempt history `hist`: records `<n>:<body>`, each body seven fields
 * `<n>:<bytes>` (attempt, started, ended, outcome, worker, error, stack; more are ignored).
 * Never throws: text that is not in the format keeps the records before the fault and is
 * reported, raw, as `error`.
 */
export function decodeAttemptHistory(text: string | undefined): { attempts: AttemptView[]; error?: UndecodedText } {
  const attempts: AttemptView[] = [];
  if (!text) return { attempts };
  const buf = Buffer.from(text, 'utf8');
  let pos = 0;
  while (pos < buf.length) {
    const len = lengthAt(buf, pos, buf.length);
    const rec = len && record(buf, len.at, len.at + len.n);
    if (!len || !rec) {
      return { attempts, error: { code: 'EMQ_BAD_PAYLOAD', message: `the attempt history is not length-prefixed records (fault at byte ${pos})`, raw: text } };
    }
    attempts.push(rec);
    pos = len.at + len.n;
  }
  return { attempts };
}

/**
 * A row's attempts (`JobView.attemptHistory`): its recorded history, then the attempt running
 * now (status `active`) or the one that completed it (status `done`), derived from the row's
 * `attempts`, `started` and `finished` (completion writes no history).
 */
export function rowAttempts(row: Record<string, string>): RowAttempts {
  const { attempts, error } = decodeAttemptHistory(row.hist);
  const startedAt = instant(row.started);
  const n = Number(row.attempts ?? 0);
  if ((row.status === 'active' || row.status === 'done') && Number.isSafeInteger(n) && n > 0) {
    const ended = row.status === 'done' ? instant(row.finished) : undefined;
    attempts.push(attemptView(n, startedAt, ended, row.status === 'done' ? 'done' : 'running'));
  }
  return { attemptHistory: attempts, startedAt, attemptHistoryError: error };
}
