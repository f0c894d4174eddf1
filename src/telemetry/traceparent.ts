/**
 * The W3C Trace Context `traceparent` header (https://www.w3.org/TR/trace-context/), version 00:
 * `00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>`. EchoMQ carries it as text in a Bus
 * entry's `tp` field and in a job's extras (`tp`), so it needs no propagator from the SDK.
 */

/** A span context as the traceparent carries it. */
export interface TraceParent {
  /** 32 lowercase hex digits, not all zero. */
  readonly traceId: string;
  /** 16 lowercase hex digits, not all zero. */
  readonly spanId: string;
  /** The trace flags (bit 0: sampled). */
  readonly traceFlags: number;
}

const PATTERN = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** Parses a traceparent; anything malformed (or version ff, or all-zero ids) gives undefined. */
export function parseTraceParent(text: unknown): TraceParent | undefined {
  if (typeof text !== 'string' || text.length > 256) return undefined;
  const m = PATTERN.exec(text);
  if (!m || m[1] === 'ff' || (m[1] === '00' && m[5] !== undefined)) return undefined;
  if (m[2] === ZERO_TRACE || m[3] === ZERO_SPAN) return undefined;
  return { traceId: m[2], spanId: m[3], traceFlags: parseInt(m[4], 16) };
}

/** Formats a span context as a version-00 traceparent. */
export function formatTraceParent(p: TraceParent): string {
  return `00-${p.traceId}-${p.spanId}-${(p.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/**
 * The traceparent in a job's extras text (JSON with the reserved field `tp`, see
 * docs/telemetry.md), or undefined when there is none or the text is not such JSON.
 */
export function traceParentOfExtras(extras: unknown): string | undefined {
  let value: unknown = extras;
  if (typeof extras === 'string') {
    if (!extras.includes('"tp"')) return undefined;
    try {
      value = JSON.parse(extras);
    } catch {
      return undefined;
    }
  }
  if (value === null || typeof value !== 'object') return undefined;
  const tp = (value as { tp?: unknown }).tp;
  return parseTraceParent(tp) ? (tp as string) : undefined;
}
