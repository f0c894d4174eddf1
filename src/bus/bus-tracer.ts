/** An event a group handler is about to run, as the tracer sees it. */
export interface TracedEvent {
  readonly topic: string;
  readonly group: string;
  /** The branded event id. */
  readonly id: string;
  /** 1 on the first delivery. */
  readonly deliveries: number;
  /** The producer's W3C traceparent, from the entry's `tp` field (absent when it had none). */
  readonly traceparent?: string;
}

/**
 * Tracing hooks of the Bus (src/telemetry implements them with OpenTelemetry). Without a tracer
 * the Bus runs exactly as before: no field is written, nothing is called.
 */
export interface BusTracer {
  /** Runs `send` inside a publish span of `topic`; `send` gets the traceparent each entry carries. */
  publish<R>(topic: string, count: number, send: (traceparent: string | undefined) => Promise<R>): Promise<R>;
  /** Runs a group handler inside a handle span, the child of the event's traceparent when it has one. */
  handle<R>(event: TracedEvent, run: () => Promise<R>): Promise<R>;
}
