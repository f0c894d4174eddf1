/**
 * `@echomq/nestjs/unstable`: the loops the Nest orchestrators drive, usable without Nest — the job
 * `Consumer`, the Bus `GroupConsumer`, the `FlowRelay`, the `Scheduler`, the `CacheFollower` — and
 * the telemetry parts they feed. **No stability promise**: these names may change in any minor
 * release; an application uses the services and decorators of `@echomq/nestjs`.
 *
 * @module @echomq/nestjs/unstable
 */
export { compileCron, wallToInstant, tzOffsetMs } from './queue/schedules/index.js';
export type { NextTick } from './queue/schedules/index.js';
export { Scheduler } from './queue/schedules/index.js';
export type { SchedulerOptions } from './queue/schedules/index.js';
export { Consumer } from './queue/consumer/index.js';
export type { JobFailure, FailureListener } from './queue/consumer/index.js';
export type { ConsumerConfig } from './queue/consumer/index.js';
export { routeByName } from './queue/name-router.js';
export type { NamedRoutes } from './queue/name-router.js';
export { EventLogReader } from './queue/event-log-reader.js';
export type { EventLogReaderOptions, QueueEventSink } from './queue/event-log-reader.js';
export type { ConsumerLogger } from './core/logger.js';
export type { ConsumerListener, RunnerCompletion, ReapOutcome, FlowRelease, FlowReleaseListener } from './queue/telemetry-hooks.js';
export type { BusTracer, TracedEvent } from './bus/bus-tracer.js';
export { BUILTIN_DEFAULTS, MAX_BATCH, resolveDefaults } from './queue/queue-options.js';
export { resolveConsumerOptions } from './queue/processor-options.js';
export type { ResolvedConsumerOptions } from './queue/processor-options.js';
export { GroupConsumer } from './bus/consumer-group/index.js';
export type { GroupConsumerConfig, GroupSnapshot } from './bus/consumer-group/index.js';
export { consumerName } from './bus/consumer-group/index.js';
export { FlowRelay } from './queue/flows/index.js';
export { CacheFollower, resolveInvalidationRules } from './follow/cache-follower.js';
export type { CacheFollowConfig, ResolvedInvalidationRule } from './follow/cache-follower.js';
export type { FlowRelayOptions } from './queue/flows/index.js';
export { DEFAULT_FLOW_BOUNDS } from './queue/flows/index.js';

// Telemetry without Nest: the W3C traceparent as jobs and events carry it, and the counters.
export { parseTraceParent, formatTraceParent, traceParentOfExtras } from './telemetry/traceparent.js';
export type { TraceParent } from './telemetry/traceparent.js';
export { MetricsRegistry, QueueCounters, Histogram, PROCESSING_BUCKETS_MS } from './telemetry/metrics-registry.js';
export type { ProcessingObserver } from './telemetry/metrics-registry.js';
export { countingListener, countingFailures, instrumentHandler } from './telemetry/consumer-telemetry.js';
export { formatPrometheus } from './telemetry/prometheus-format.js';
export { EchoMqTracing, INSTRUMENTATION_SCOPE } from './telemetry/tracing.js';
