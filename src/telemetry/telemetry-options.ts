import { InvalidOptionError } from '../core/errors.js';

/** The module's `telemetry` options (docs/telemetry.md). */
export interface TelemetryOptions {
  /**
   * OpenTelemetry spans (enqueue, process, publish, handle, flow release) and the traceparent
   * carried by jobs and events, when `@opentelemetry/api` is installed. Default true.
   */
  readonly tracing?: boolean;
  /** OpenTelemetry metric instruments (the same figures as `EchoMqMetrics.prometheus()`), when installed. Default true. */
  readonly otelMetrics?: boolean;
}

const KEYS: Record<keyof TelemetryOptions, true> = { tracing: true, otelMetrics: true };

/** Refuses telemetry options that are not an object of known boolean keys (EMQ_BAD_OPTION). */
export function validateTelemetryOptions(o: unknown): void {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new InvalidOptionError('telemetry options must be an object');
  for (const [k, v] of Object.entries(o)) {
    if (!Object.hasOwn(KEYS, k)) throw new InvalidOptionError(`unknown telemetry option ${JSON.stringify(k)} (known: ${Object.keys(KEYS).join(', ')})`);
    if (v !== undefined && typeof v !== 'boolean') throw new InvalidOptionError(`telemetry.${k} must be a boolean`);
  }
}
