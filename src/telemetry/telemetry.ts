import { MetricsRegistry } from './metrics-registry.js';
import { loadOpenTelemetry, type OtelApi } from './otel-loader.js';
import type { TelemetryOptions } from './telemetry-options.js';
import { EchoMqTracing } from './tracing.js';

/**
 * The telemetry of one app (provided by `EchoMqModule`): the in-process metric counters, always
 * on, and, when `@opentelemetry/api` is installed and not switched off, the tracing adapter and
 * the API for OpenTelemetry metrics. Without the package no OpenTelemetry code runs.
 */
export class EchoMqTelemetry {
  /** The counters every consumer, enqueue and failure of this app bumps. */
  readonly registry = new MetricsRegistry();

  constructor(
    /** Spans and traceparents; undefined when tracing is off or the API is not installed. */
    readonly tracing?: EchoMqTracing,
    /** The API for OpenTelemetry metrics; undefined when they are off or the API is not installed. */
    readonly otelMetrics?: OtelApi,
  ) {}

  /** Loads `@opentelemetry/api` when some of it is wanted (quietly absent when not installed). */
  static async create(o: TelemetryOptions = {}): Promise<EchoMqTelemetry> {
    const tracing = o.tracing !== false;
    const metrics = o.otelMetrics !== false;
    const api = tracing || metrics ? await loadOpenTelemetry() : undefined;
    return new EchoMqTelemetry(api && tracing ? new EchoMqTracing(api) : undefined, api && metrics ? api : undefined);
  }
}
