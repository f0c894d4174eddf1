/**
 * `@echomq/nestjs/protocol`: the wire, for other runtimes and low-level use without Nest — branded
 * ids, the key grammar and slot law, the codec, the script registry and the typed script calls
 * (`wire`, `busWire`, `flowWire`), the connection and its node lease, and the consumer loops the
 * Nest orchestrators drive (`Consumer`, `GroupConsumer`, `FlowRelay`). Errors are exported by the
 * main entry (`@echomq/nestjs`).
 *
 * @module @echomq/nestjs/protocol
 */

// Branded ids.
export { IdMinter, isBrandedId, assertBrandedId, parseId, composeId, encodeBody, decodeBody, ID_EPOCH_MS } from './ids.js';
export type { Snowflake } from './ids.js';
export { EVENT_NS, eventIdOf, streamIdOf, eventInstant } from './event-id.js';

// Keys, the slot law, the codec.
export { assertName, queueKeys, QueueKeys, globalKeys, MAX_NAME_LENGTH, topicKeys, TopicKeys, assertCacheKey, CacheKeys } from './keys.js';
export { crc16, keySlot } from './slot.js';
export { encodePayload, decodePayload, DEFAULT_MAX_PAYLOAD_BYTES } from './codec.js';

// Scripts and the typed calls on them.
export { PROTOCOL_VERSION, SCRIPT_NAMES, scripts, sha1, runScript } from './scripts.js';
export type { ScriptName, LoadedScript, ScriptClient, ScriptPipeline } from './scripts.js';
export { fromReplyError } from './errors.js';
export { wire } from './wire.js';
export { adminWire, busAdminWire } from './admin-wire.js';
export type { AdminReply, RegistryKind } from './admin-wire.js';
export type { WireJob, WireClaim, ClaimFlow, WireCompletion, ClaimReply, ReapReply, ReapedJob } from './wire.js';
export type { ClaimLimits, PolicyReply } from './policy-wire.js';
export { readPolicy, writePolicy, decodePolicy, samePolicy, describePolicy } from './policy-wire.js';
export { encodeExtras, decodeExtras, MAX_EXTRAS_BYTES } from './extras.js';
export type { JobExtras } from './extras.js';
export { busWire, BUS_BATCH_LIMIT } from '../bus/bus-wire.js';
export type { PublishItem } from '../bus/bus-wire.js';
export type { TrimReply } from '../bus/bus-wire.js';
export { flowWire } from './flow-wire.js';
export type { WireFlowNode, WireFlowEdge, DeliverOutcome, Delivery, OutboxEntry } from './flow-wire.js';
export { scheduleWire } from './schedule-wire.js';
export type { WireTick, TickOutcome } from './schedule-wire.js';
export { compileCron, wallToInstant, tzOffsetMs } from '../queue/cron.js';
export type { NextTick } from '../queue/cron.js';

// The connection.
export { EchoMqConnection, createClient } from './connection.js';
export type { ValkeyClient } from './connection.js';
export type { ClientRole } from './client-setup.js';
export type { ConnectionLogger } from './eviction-policy.js';
export { NodeLease } from './node-lease.js';
export { openAtBoot, resolveBootRetry } from './boot-retry.js';
export type { ResolvedBootRetry } from './boot-retry.js';
export type { NodeLeaseOptions, LeaseClient } from './node-lease.js';

// The loops, usable without Nest.
export { Consumer } from '../queue/consumer.js';
export type { JobFailure, FailureListener } from '../queue/failure-log.js';
export type { ConsumerConfig, ConsumerLogger } from '../queue/consumer.js';
export type { ConsumerListener, RunnerCompletion, ReapOutcome, FlowRelease, FlowReleaseListener } from '../queue/telemetry.hooks.js';
export type { BusTracer, TracedEvent } from '../bus/bus-tracer.js';
export { BUILTIN_DEFAULTS, MAX_BATCH, resolveDefaults, resolveConsumerOptions } from '../queue/queue.options.js';
export type { ResolvedConsumerOptions } from '../queue/queue.options.js';
export { GroupConsumer } from '../bus/group-consumer.js';
export type { GroupConsumerConfig } from '../bus/group-options.js';
export { consumerName } from '../bus/group-options.js';
export { FlowRelay } from '../queue/flow-relay.js';
export { CacheFollower, resolveInvalidationRules } from '../cache/cache-follow.js';
export type { CacheFollowConfig, ResolvedInvalidationRule } from '../cache/cache-follow.js';
export type { FlowRelayOptions } from '../queue/flow-relay.js';
export { DEFAULT_FLOW_BOUNDS } from '../queue/flow.types.js';

// Telemetry without Nest: the W3C traceparent as jobs and events carry it, and the counters.
export { parseTraceParent, formatTraceParent, traceParentOfExtras } from '../telemetry/traceparent.js';
export type { TraceParent } from '../telemetry/traceparent.js';
export { MetricsRegistry, QueueCounters, Histogram, PROCESSING_BUCKETS_MS } from '../telemetry/metrics.registry.js';
export type { ProcessingObserver } from '../telemetry/metrics.registry.js';
export { countingListener, countingFailures, instrumentHandler } from '../telemetry/consumer.telemetry.js';
export { formatPrometheus } from '../telemetry/prometheus.format.js';
export { EchoMqTracing, INSTRUMENTATION_SCOPE } from '../telemetry/tracing.js';
