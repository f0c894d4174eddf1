/**
 * Tracing (docs/telemetry.md): the producer's W3C trace context travels in the Bus entry (`tp`)
 * so the group handler's span continues the producer's trace (one trace id, checked with the SDK's
 * in-memory exporter); jobs get enqueue and process spans, and the process span is the child of
 * the traceparent in the job's extras, end to end (enqueue writes it as extras `tp`, claim hands
 * it back). Spans carry `messaging.operation.name`, a failed one `error.type`, and only a batch
 * `messaging.batch.message_count`.
 */
import 'reflect-metadata';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import * as otel from '@opentelemetry/api';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { BusService, EchoMqModule, Flow, OnEvent, Processor, QueueService, type BusEvent, type Job, type TelemetryOptions } from '../../src/index.js';
import { topicKeys } from '../../src/core/keys.js';
import { EchoMqTracing } from '../../src/telemetry/tracing.js';
import { installOtel, type OtelHarness } from '../helpers/otel.js';
import { eventually, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

const TOPIC = randomQueue('tr-topic');
const QUEUE = randomQueue('tr-queue');
const PARENTS = randomQueue('tr-parents');
const CHILDREN = randomQueue('tr-children');
/** The active span's trace id and span id as each handler saw them. */
const seen = { handle: [] as [string, string][], process: [] as [string, string][] };
const active = (): [string, string] => {
  const sc = trace.getActiveSpan()?.spanContext();
  return [sc?.traceId ?? '', sc?.spanId ?? ''];
};

@Injectable()
class Workers {
  @OnEvent(TOPIC, { group: 'g', ackTimeoutMs: 1000, maxDeliveries: 1 })
  async handle(e: BusEvent<{ fail?: boolean }>): Promise<void> {
    seen.handle.push(active());
    if (e.payload.fail) throw new Error('handler refused the event');
  }

  @Processor(QUEUE)
  async process(_job: Job<{ n: number }>): Promise<void> {
    seen.process.push(active());
  }

  @Processor(CHILDREN)
  async child(): Promise<number> {
    return 1;
  }

  @Flow(PARENTS)
  async parent(): Promise<string> {
    return 'released';
  }
}

async function boot(telemetry?: TelemetryOptions): Promise<INestApplication> {
  const mod = await Test.createTestingModule({
    imports: [EchoMqModule.forRoot({ connection: { url: testUrl() }, shutdownTimeoutMs: 2000, telemetry })],
    providers: [Workers],
  }).compile();
  const app = mod.createNestApplication({ logger: false });
  await app.init();
  return app;
}

const named = (spans: ReadableSpan[], name: string): ReadableSpan[] => spans.filter((s) => s.name === name);
const tracer = () => trace.getTracer('test');

/** Runs `fn` inside an active `http request` span (the producer's trace); returns its result and the span's context. */
async function inRequest<R>(fn: () => Promise<R>): Promise<[R, otel.SpanContext]> {
  return tracer().startActiveSpan('http request', async (span): Promise<[R, otel.SpanContext]> => {
    try {
      return [await fn(), span.spanContext()];
    } finally {
      span.end();
    }
  });
}

describe('tracing across producer and consumer', () => {
  let o: OtelHarness;
  let app: INestApplication;
  beforeAll(async () => {
    o = installOtel();
    app = await boot();
  });
  afterAll(async () => {
    await app.close();
    await o.close();
  });

  it('a Bus event carries the producer trace context: publish and handle spans share one trace id', async () => {
    const bus = app.get(BusService);
    const [id, request] = await inRequest(() => bus.publish(TOPIC, { n: 1 }));
    await eventually(() => named(o.spans(), `handle ${TOPIC}`).length === 1, 5000, 'the handle span');
    const [publish] = named(o.spans(), `publish ${TOPIC}`);
    const [handle] = named(o.spans(), `handle ${TOPIC}`);
    // One trace: request → publish (producer) → handle (consumer, remote parent from the entry).
    expect(publish.spanContext().traceId).toBe(request.traceId);
    expect(publish.parentSpanContext?.spanId).toBe(request.spanId);
    expect(publish.kind).toBe(SpanKind.PRODUCER);
    expect(publish.attributes).toMatchObject({ 'messaging.operation.type': 'send', 'messaging.operation.name': 'publish' });
    // One event: no batch count (the conventions keep it for batches).
    expect(publish.attributes).not.toHaveProperty(['messaging.batch.message_count']);
    expect(handle.spanContext().traceId).toBe(request.traceId);
    expect(handle.parentSpanContext?.spanId).toBe(publish.spanContext().spanId);
    expect(handle.kind).toBe(SpanKind.CONSUMER);
    expect(handle.attributes).toMatchObject({ 'messaging.system': 'echomq', 'messaging.operation.type': 'process', 'messaging.operation.name': 'process', 'messaging.destination.name': TOPIC, 'messaging.consumer.group.name': 'g', 'messaging.message.id': id, 'echomq.event.deliveries': 1 });
    // The handler ran inside its span.
    expect(seen.handle[0]).toEqual([request.traceId, handle.spanContext().spanId]);
    // On the wire: the entry's tp field is the publish span's traceparent.
    const raw = rawClient();
    try {
      const [[, fields]] = (await raw.xrange(topicKeys(TOPIC).log, '-', '+')) as [string, string[]][];
      expect(fields).toEqual(['p', '{"n":1}', 'tp', `00-${request.traceId}-${publish.spanContext().spanId}-01`]);
    } finally {
      raw.disconnect();
    }
  });

  it('a failing handler ends its span with an error status', async () => {
    await app.get(BusService).publish(TOPIC, { fail: true });
    await eventually(() => named(o.spans(), `handle ${TOPIC}`).some((s) => s.status.code === SpanStatusCode.ERROR), 5000, 'the failed handle span');
    const [failed] = named(o.spans(), `handle ${TOPIC}`).filter((s) => s.status.code === SpanStatusCode.ERROR);
    expect(failed.status.message).toBe('handler refused the event');
    expect(failed.events.map((e) => e.name)).toContain('exception');
    // A plain Error: its class name.
    expect(failed.attributes['error.type']).toBe('Error');
  });

  it('a failed enqueue span carries the EchoMqError code as error.type', async () => {
    await expect(app.get(QueueService).enqueue('bad name', { n: 0 })).rejects.toMatchObject({ code: 'EMQ_BAD_NAME' });
    const [failed] = named(o.spans(), 'enqueue bad name');
    expect(failed.status.code).toBe(SpanStatusCode.ERROR);
    expect(failed.attributes['error.type']).toBe('EMQ_BAD_NAME');
  });

  it('a job gets an enqueue span in the producer trace and a process span around its handler', async () => {
    const [id, request] = await inRequest(() => app.get(QueueService).enqueue(QUEUE, { n: 1 }));
    await eventually(() => named(o.spans(), `process ${QUEUE}`).length === 1, 5000, 'the process span');
    const [enqueue] = named(o.spans(), `enqueue ${QUEUE}`);
    const [processed] = named(o.spans(), `process ${QUEUE}`);
    expect(enqueue.spanContext().traceId).toBe(request.traceId);
    expect(enqueue.kind).toBe(SpanKind.PRODUCER);
    expect(enqueue.attributes).toMatchObject({ 'messaging.destination.name': QUEUE, 'messaging.operation.type': 'send', 'messaging.operation.name': 'send' });
    expect(enqueue.attributes).not.toHaveProperty(['messaging.batch.message_count']);
    expect(processed.kind).toBe(SpanKind.CONSUMER);
    expect(processed.attributes).toMatchObject({ 'messaging.operation.type': 'process', 'messaging.operation.name': 'process', 'messaging.destination.name': QUEUE, 'messaging.message.id': id, 'echomq.job.attempt': 1 });
    expect(seen.process[0][1]).toBe(processed.spanContext().spanId);
  });

  it('a flow parent released by its last child gets a flow release span', async () => {
    const flow = await app.get(QueueService).flow({ queue: PARENTS, payload: {}, children: [{ queue: CHILDREN, payload: 1 }] });
    const releaseOf = () => named(o.spans(), `flow release ${PARENTS}`).find((s) => s.attributes['messaging.message.id'] === flow.id);
    await eventually(() => releaseOf() !== undefined, 10_000, 'the flow release span');
    expect(releaseOf()!.attributes).toMatchObject({ 'messaging.operation.type': 'settle', 'messaging.operation.name': 'release', 'messaging.destination.name': PARENTS, 'echomq.flow.child_id': flow.children[0].id, 'echomq.flow.child_outcome': 'done' });
    await eventually(async () => (await app.get(QueueService).getJob(PARENTS, flow.id))?.status === 'done', 10_000, 'the parent to run');
  });

  // Enqueue writes `opts.traceparent` as the job's extras `tp`; claim hands it back (job.traceparent).
  it('the process span continues the enqueue span trace end to end', async () => {
    const [id, request] = await inRequest(() => app.get(QueueService).enqueue(QUEUE, { n: 2 }));
    const processOf = () => named(o.spans(), `process ${QUEUE}`).find((s) => s.attributes['messaging.message.id'] === id);
    await eventually(() => processOf() !== undefined, 5000, 'the process span');
    const enqueue = named(o.spans(), `enqueue ${QUEUE}`).find((s) => s.spanContext().traceId === request.traceId)!;
    expect(processOf()!.spanContext().traceId).toBe(request.traceId);
    expect(processOf()!.parentSpanContext?.spanId).toBe(enqueue.spanContext().spanId);
  });

  it('the process span is the child of the job traceparent (the consumer side of the job contract)', async () => {
    const tracing = new EchoMqTracing(otel);
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const job = { id: 'job00000000001', queue: QUEUE, attempt: 2, traceparent: tp } as unknown as Job<unknown>;
    const inner = await tracing.process(job, async () => active());
    const span = named(o.spans(), `process ${QUEUE}`).find((s) => s.attributes['messaging.message.id'] === 'job00000000001')!;
    expect(span.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(span.parentSpanContext).toMatchObject({ spanId: '00f067aa0ba902b7', isRemote: true });
    expect(inner).toEqual(['4bf92f3577b34da6a3ce929d0e0e4736', span.spanContext().spanId]);
  });

  it('a batch enqueue carries messaging.batch.message_count', async () => {
    const ids = await app.get(QueueService).enqueueMany(QUEUE, [{ payload: { n: 10 } }, { payload: { n: 11 } }]);
    const batch = named(o.spans(), `enqueue ${QUEUE}`).find((s) => s.attributes['messaging.batch.message_count'] === 2);
    expect(batch?.attributes).toMatchObject({ 'messaging.operation.type': 'send', 'messaging.operation.name': 'send' });
    await eventually(() => ids.every((id) => named(o.spans(), `process ${QUEUE}`).some((s) => s.attributes['messaging.message.id'] === id)), 5000, 'the batch processed');
  });
});

describe('tracing off', () => {
  it('writes no tp field and makes no span', async () => {
    const o = installOtel();
    const app = await boot({ tracing: false });
    const topic = randomQueue('tr-off');
    const raw = rawClient();
    try {
      await inRequest(() => app.get(BusService).publish(topic, 1));
      const [[, fields]] = (await raw.xrange(topicKeys(topic).log, '-', '+')) as [string, string[]][];
      expect(fields).toEqual(['p', '1']);
      expect(o.spans().map((s) => s.name)).toEqual(['http request']);
    } finally {
      raw.disconnect();
      await app.close();
      await o.close();
    }
  });
});
