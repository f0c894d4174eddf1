import { InvalidOptionError } from './errors.js';

/**
 * A job's extras: the small per-job settings that ride with it on the wire (enqueue stores them,
 * every claim of the job returns them; docs/protocol.md §3, "Extras"). Known members: `t`, the
 * job's own timeout, `tp`, the producer's W3C `traceparent`, and `n`, the job's name. Unknown
 * members are kept.
 */
export interface JobExtras {
  /** The job's own timeout in ms (1..86,400,000): the handler is aborted and the attempt fails after it. */
  readonly t?: number;
  /** The producer's W3C `traceparent` (1..256 bytes), reserved for tracing. */
  readonly tp?: string;
  /** The job's name (1..128 bytes, no control characters): what a processor routes on (`job.name`). */
  readonly n?: string;
}

/** Longest job name in bytes, as `enqueue.lua` bounds extras `n`. */
export const MAX_JOB_NAME_BYTES = 128;

/**
 * Returns `name` when it is a valid job name (a string of 1..128 bytes without control
 * characters, as `enqueue.lua` checks extras `n`); else throws `InvalidOptionError`.
 */
export function checkJobName(name: unknown, what = 'a job name'): string {
  if (typeof name !== 'string' || name.length === 0 || Buffer.byteLength(name) > MAX_JOB_NAME_BYTES || /[\x00-\x1f\x7f]/.test(name)) {
    throw new InvalidOptionError(`${what} must be a string of 1..${MAX_JOB_NAME_BYTES} bytes without control characters, got ${JSON.stringify(String(name)).slice(0, 160)}`);
  }
  return name;
}

/** Largest extras text in bytes, as `enqueue.lua` bounds it. */
export const MAX_EXTRAS_BYTES = 1024;
/** Largest per-job timeout in ms (one day), as `enqueue.lua` bounds `t`. */
export const MAX_JOB_TIMEOUT_MS = 86_400_000;

/**
 * The wire text of a job's extras: "" when it has none (a plain job costs nothing), else compact
 * JSON. Refuses out-of-range members with `InvalidOptionError` before anything is sent.
 */
export function encodeExtras(x: JobExtras): string {
  const out: Record<string, number | string> = {};
  if (x.t !== undefined) {
    if (!Number.isInteger(x.t) || x.t < 1 || x.t > MAX_JOB_TIMEOUT_MS) throw new InvalidOptionError(`timeoutMs must be an integer in 1..${MAX_JOB_TIMEOUT_MS}`);
    out.t = x.t;
  }
  if (x.tp !== undefined) {
    if (typeof x.tp !== 'string' || x.tp.length === 0 || Buffer.byteLength(x.tp) > 256) throw new InvalidOptionError('a traceparent must be a string of 1..256 bytes');
    out.tp = x.tp;
  }
  if (x.n !== undefined) out.n = checkJobName(x.n, 'name');
  const text = Object.keys(out).length === 0 ? '' : JSON.stringify(out);
  if (Buffer.byteLength(text) > MAX_EXTRAS_BYTES) throw new InvalidOptionError(`a job's extras are at most ${MAX_EXTRAS_BYTES} bytes`);
  return text;
}

/** A claimed job's extras (`WireClaim.extras`): {} for "" and for anything that is not a JSON object. */
export function decodeExtras(text: string): JobExtras {
  if (!text) return {};
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return {};
    const o = v as Record<string, unknown>;
    const x: { t?: number; tp?: string; n?: string } = {};
    if (typeof o.t === 'number' && Number.isInteger(o.t) && o.t >= 1) x.t = o.t;
    if (typeof o.tp === 'string') x.tp = o.tp;
    if (typeof o.n === 'string') x.n = o.n;
    return x;
  } catch {
    return {};
  }
}

/**
 * The timeout a claimed job runs under: the shorter of the processor's (`processorMs`, absent or
 * 0 = none) and the job's own `t` (from its extras text); 0 = none.
 */
export function jobTimeout(processorMs: number | undefined, extras: string): number {
  const p = processorMs ?? 0;
  if (!extras) return p; // a plain job: no parse
  const t = decodeExtras(extras).t;
  return t === undefined ? p : p > 0 ? Math.min(p, t) : t;
}
