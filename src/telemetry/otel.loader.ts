import type * as Otel from '@opentelemetry/api';

/** The `@opentelemetry/api` module, as loaded. */
export type OtelApi = typeof Otel;

let loading: Promise<OtelApi | undefined> | undefined;

/**
 * Loads the optional peer `@opentelemetry/api` once, with a dynamic `import()`; resolves to
 * undefined (quietly) when it is not installed. Nothing else of EchoMQ imports it.
 */
export function loadOpenTelemetry(): Promise<OtelApi | undefined> {
  const name = '@opentelemetry/api';
  loading ??= (import(name) as Promise<OtelApi & { default?: OtelApi }>).then(
    (m) => (m.trace ? m : m.default),
    () => undefined,
  );
  return loading;
}
