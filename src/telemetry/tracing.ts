import type { Attributes, Context, Span, SpanKind as SpanKindT, Tracer } from '@opentelemetry/api';
import type { BusTracer, TracedEvent } from '../bus/bus-tracer.js';
import type { Job } from '../queue/job.js';
import type { FlowRelease } from '../queue/telemetry-hooks.js';
import { formatTraceParent, parseTraceParent } from './traceparent.js';
import type { OtelApi } from './otel-loader.js';
import { EchoMqError } from '../core/errors.js';

/** The instrumentation scope of every EchoMQ span and instrument. */
export const INSTRUMENTATION_SCOPE = '@echomq/nestjs';

const isThenable = (v: unknown): v is PromiseLike<unknown> => typeof (v as { then?: unknown } | null)?.then === 'function';

/**
 * The OpenTelemetry spans of EchoMQ (docs/telemetry.md): enqueue, process, publish, handle and
 * flow release, with the messaging attributes. Built only when `@opentelemetry/api` loaded and
 * tracing is on; otherwise no code of this class runs. The W3C traceparent is formatted and
 * parsed here (no propagator needed): a producer span's context is what its job or event carries.
 */
export class EchoMqTracing implements BusTracer {
  private readonly tracer: Tracer;

  constructor(private readonly api: OtelApi) {
    this.tracer = api.trace.getTracer(INSTRUMENTATION_SCOPE);
  }

  /** Runs `send` in an `enqueue <queue>` producer span; `send` gets the span's traceparent. */
  enqueue<R>(queue: string, count: number, send: (traceparent: string | undefined) => Promise<R>): Promise<R> {
    return this.producer(`enqueue ${queue}`, 'send', queue, count, send);
  }

  /** Runs `send` in a `publish <topic>` producer span; `send` gets the span's traceparent. */
  publish<R>(topic: string, count: number, send: (traceparent: string | undefined) => Promise<R>): Promise<R> {
    return this.producer(`publish ${topic}`, 'publish', topic, count, send);
  }

  /**
   * Runs a job handler in a `process <queue>` consumer span, the child of the traceparent in the
   * job carries (`job.traceparent`, its extras `tp`) when it has a valid one, else of the active context.
   */
  process<R>(job: Job<unknown>, run: () => R | Promise<R>): R | Promise<R> {
    const tp = job.traceparent !== undefined && parseTraceParent(job.traceparent) ? job.traceparent : undefined;
    const attrs: Attributes = {
      'messaging.system': 'echomq',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': job.queue,
      'messaging.message.id': job.id,
      'echomq.job.attempt': job.attempt,
    };
    return this.within(`process ${job.queue}`, this.api.SpanKind.CONSUMER, attrs, this.parent(tp), run);
  }

  /** Runs a group handler in a `handle <topic>` consumer span, the child of the event's traceparent. */
  handle<R>(e: TracedEvent, run: () => Promise<R>): Promise<R> {
    const attrs: Attributes = {
      'messaging.system': 'echomq',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.destination.name': e.topic,
      'messaging.consumer.group.name': e.group,
      'messaging.message.id': e.id,
      'echomq.event.deliveries': e.deliveries,
    };
    return this.within(`handle ${e.topic}`, this.api.SpanKind.CONSUMER, attrs, this.parent(e.traceparent), run) as Promise<R>;
  }

  /** Records a `flow release <queue>` span: a child's outcome released its parent (started at `startMs`). */
  flowRelease(info: FlowRelease, startMs: number): void {
    const span = this.tracer.startSpan(`flow release ${info.queue}`, {
      kind: this.api.SpanKind.INTERNAL,
      startTime: startMs,
      attributes: {
        'messaging.system': 'echomq',
        'messaging.operation.type': 'settle',
        'messaging.operation.name': 'release',
        'messaging.destination.name': info.queue,
        'messaging.message.id': info.parentId,
        'echomq.flow.child_id': info.childId,
        'echomq.flow.child_outcome': info.outcome,
      },
    });
    span.end();
  }

  /** A producer span; `messaging.batch.message_count` only on a batch (a count other than 1), as the conventions ask. */
  private producer<R>(name: string, operation: string, destination: string, count: number, send: (tp: string | undefined) => Promise<R>): Promise<R> {
    const attrs: Attributes = {
      'messaging.system': 'echomq',
      'messaging.operation.type': 'send',
      'messaging.operation.name': operation,
      'messaging.destination.name': destination,
    };
    if (count !== 1) attrs['messaging.batch.message_count'] = count;
    return this.within(name, this.api.SpanKind.PRODUCER, attrs, this.api.context.active(), (span) => {
      const sc = span.spanContext();
      return send(this.api.trace.isSpanContextValid(sc) ? formatTraceParent(sc) : undefined);
    }) as Promise<R>;
  }

  /** The context a consumer span starts in: the remote parent of `tp`, else the active context. */
  private parent(tp: string | undefined): Context {
    const p = parseTraceParent(tp);
    const active = this.api.context.active();
    return p ? this.api.trace.setSpanContext(active, { ...p, isRemote: true }) : active;
  }

  /**
   * Starts a span in `parent`, runs `fn` with it active, ends it when `fn` settles (an error sets its
   * status and `error.type`: see {@link errorType}).
   */
  private within<R>(name: string, kind: SpanKindT, attributes: Attributes, parent: Context, fn: (span: Span) => R | Promise<R>): R | Promise<R> {
    const span = this.tracer.startSpan(name, { kind, attributes }, parent);
    const fail = (err: unknown): never => {
      span.recordException(err instanceof Error ? err : String(err));
      span.setAttribute('error.type', errorType(err));
      span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      span.end();
      throw err;
    };
    let out: R | Promise<R>;
    try {
      out = this.api.context.with(this.api.trace.setSpan(parent, span), fn, undefined, span);
    } catch (err) {
      return fail(err);
    }
    if (!isThenable(out)) {
      span.end();
      return out;
    }
    return Promise.resolve(out).then((v) => {
      span.end();
      return v;
    }, fail);
  }
}

/**
 * The `error.type` of a failed span (OpenTelemetry conventions): an `EchoMqError`'s stable `code`,
 * else the error's class name, else `_OTHER` (a thrown value that is not an `Error`).
 */
export function errorType(err: unknown): string {
  if (err instanceof EchoMqError) return err.code;
  if (err instanceof Error) return err.constructor?.name || err.name || 'Error';
  return '_OTHER';
}
