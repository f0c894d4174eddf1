import { InvalidOptionError } from '../core/errors.js';
import { keySet, refuseNonObject, refuseUnknownKeys } from '../core/known-keys.js';

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

const KEYS = keySet<TelemetryOptions>({ tracing: true, otelMetrics: true });

/** Refuses telemetry options that are not an object of known boolean keys (EMQ_BAD_OPTION, naming `telemetry.<key>`). */
export function validateTelemetryOptions(o: unknown): void {
  refuseNonObject(o, 'telemetry options');
  refuseUnknownKeys(o, KEYS, 'EchoMqModule options', { path: 'telemetry' });
  for (const [k, v] of Object.entries(o)) {
    if (v !== undefined && typeof v !== 'boolean') throw new InvalidOptionError(`telemetry.${k} must be a boolean`);
  }
}
