import { AsyncLocalStorage } from 'node:async_hooks';
import { ROOT_CONTEXT, context, metrics, trace, type Context, type ContextManager } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { MeterProvider, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';

/** A context manager over AsyncLocalStorage (what the Node SDK registers), so `context.active()` follows awaits. */
class AsyncContextManager implements ContextManager {
  private readonly store = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.store.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.store.run(ctx, () => fn.apply(thisArg, args));
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.store.disable();
    return this;
  }
}

/** A reader whose `collect()` the test calls. */
class PullReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/** The OpenTelemetry SDK registered globally with in-memory export, for one spec file. */
export interface OtelHarness {
  readonly exporter: InMemorySpanExporter;
  /** Finished spans so far. */
  spans(): ReadableSpan[];
  /** Collects the metrics now. */
  collect(): Promise<ResourceMetrics>;
  /** Unregisters everything. */
  close(): Promise<void>;
}

/** Registers a tracer provider (in-memory exporter), a meter provider (pull reader) and a context manager. */
export function installOtel(): OtelHarness {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const reader = new PullReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  context.setGlobalContextManager(new AsyncContextManager());
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  return {
    exporter,
    spans: () => exporter.getFinishedSpans(),
    collect: async () => (await reader.collect()).resourceMetrics,
    close: async () => {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
      trace.disable();
      metrics.disable();
      context.disable();
    },
  };
}
