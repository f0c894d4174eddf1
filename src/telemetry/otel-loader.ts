import type * as Otel from '@opentelemetry/api';

/** The `@opentelemetry/api` module, as loaded. */
export type OtelApi = typeof Otel;

const loaded = new Map<string, Promise<OtelApi | undefined>>();

/**
 * Loads the optional peer `@opentelemetry/api` (or the module `name`) once, with a dynamic
 * `import()`; resolves to undefined, quietly, when it is not installed. Nothing else of EchoMQ
 * imports it, so an app without it never loads any OpenTelemetry code.
 */
export function loadOpenTelemetry(name = '@opentelemetry/api'): Promise<OtelApi | undefined> {
  let p = loaded.get(name);
  if (!p) {
    p = (import(name) as Promise<OtelApi & { default?: OtelApi }>).then(
      (m) => (m.trace ? m : m.default),
      () => undefined,
    );
    loaded.set(name, p);
  }
  return p;
}
