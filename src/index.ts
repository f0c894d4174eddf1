/**
 * EchoMQ for NestJS: the public entry point. Everything a user needs is exported here.
 */
export * from './protocol/errors.js';
export { IdMinter, isBrandedId, assertBrandedId, parseId, composeId, encodeBody, decodeBody, ID_EPOCH_MS } from './protocol/ids.js';
export type { Snowflake } from './protocol/ids.js';
export { assertName, queueKeys, QueueKeys, globalKeys, MAX_NAME_LENGTH } from './protocol/keys.js';
export { crc16, keySlot } from './protocol/slot.js';
export { encodePayload, decodePayload, DEFAULT_MAX_PAYLOAD_BYTES } from './protocol/codec.js';
export type { Json } from './protocol/codec.js';
export { PROTOCOL_VERSION, SCRIPT_NAMES, scripts, sha1, runScript } from './protocol/scripts.js';
export type { ScriptName, LoadedScript, ScriptClient } from './protocol/scripts.js';
export { EchoMqConnection, createClient } from './protocol/connection.js';
export type { ValkeyConnectionOptions, ValkeyClient } from './protocol/connection.js';
export type { ConnectionLogger } from './protocol/eviction-policy.js';
export { NodeLease, NodeLeaseError } from './protocol/node-lease.js';
export type { NodeLeaseOptions } from './protocol/node-lease.js';
export { wire } from './protocol/wire.js';
export type { WireJob, WireClaim, WireCompletion, ClaimReply } from './protocol/wire.js';
export { QueueService } from './queue/queue.service.js';
export type { EnqueueItem } from './queue/queue.service.js';
export { Consumer } from './queue/consumer.js';
export type { ConsumerConfig, ConsumerLogger } from './queue/consumer.js';
export { BUILTIN_DEFAULTS, MAX_BATCH, resolveDefaults, resolveConsumerOptions } from './queue/queue.options.js';
export type { ResolvedConsumerOptions } from './queue/queue.options.js';
export type { BackoffOptions, QueueDefaults, EnqueueOptions, ProcessorOptions } from './queue/queue.options.js';
export type { Job, JobView, UndecodedText, JobStatus, JobCounts, JobHandler, QueueEvent, QueueEventKind } from './queue/job.js';
export { BusService } from './bus/bus.service.js';
export type { BusOptions } from './bus/bus.options.js';
export { eventIdOf, streamIdOf, eventInstant, EVENT_NS } from './bus/event-id.js';
export { topicKeys, TopicKeys } from './protocol/keys.js';
export { EchoMqModule } from './nest/echomq.module.js';
export type { EchoMqModuleOptions, EchoMqModuleAsyncOptions } from './nest/echomq.options.js';
export type { EchoMqOptionsFactory, QueueRegistration, EchoMqConnectionOption, EmbeddedConnectionOptions } from './nest/echomq.options.js';
export { Queue } from './nest/queue.handle.js';
export { InjectQueue, getQueueToken } from './nest/inject-queue.decorator.js';
export { Processor } from './nest/processor.decorator.js';
export type { ProcessorMetadata } from './nest/processor.decorator.js';
export { Flow, flowHandler } from './nest/flow.decorator.js';
export type { FlowStepOptions } from './nest/flow.decorator.js';
export { FlowService } from './queue/flow.service.js';
export type { FlowOptions } from './queue/flow.service.js';
export { FlowRelay } from './queue/flow-relay.js';
export type { FlowRelayOptions } from './queue/flow-relay.js';
export { DEFAULT_FLOW_BOUNDS } from './queue/flow.types.js';
export type {
  ChildFailurePolicy,
  ChildOutcome,
  ChildResult,
  FlowBounds,
  FlowChildView,
  FlowChildren,
  FlowJob,
  FlowNode,
  FlowSpec,
  FlowView,
} from './queue/flow.types.js';
export { flowWire } from './protocol/flow-wire.js';
export type { WireFlowNode, WireFlowEdge, DeliverOutcome, OutboxEntry } from './protocol/flow-wire.js';
export { startEmbeddedValkey, freePort } from './testing/embedded-valkey.js';
export type { EmbeddedValkey, EmbeddedValkeyOptions } from './testing/embedded-valkey.js';
export { GroupConsumer } from './bus/group-consumer.js';
export type { GroupConsumerConfig } from './bus/group-options.js';
export { resolveGroupOptions, consumerName, startId } from './bus/group-options.js';
export type { OnEventOptions, ResolvedGroupOptions, GroupStart, BusEvent, EventHandler } from './bus/group-options.js';
export { busLosses$ } from './bus/group-losses.js';
export type { GroupLoss, GroupLossKind } from './bus/group-losses.js';
export { OnEvent, ON_EVENT_METADATA } from './nest/on-event.decorator.js';
export type { OnEventMetadata } from './nest/on-event.decorator.js';
export { GroupOrchestrator } from './nest/group.orchestrator.js';
export type { BusEvent as LogEvent, RetentionPolicy, TrimResult, ReplayOptions, DeadLetter } from './bus/bus.types.js';
export { busWire, BUS_BATCH_LIMIT } from './bus/bus-wire.js';
export type { TrimReply } from './bus/bus-wire.js';
export { TRIM_INTERVAL_MS } from './bus/bus.service.js';
export { CacheService } from './cache/cache.service.js';
export type { CacheApi, CacheEntryOptions, CacheOptions, CacheStats, Loader } from './cache/cache.types.js';
export { Cached, CacheEvict } from './nest/cached.decorator.js';
export type { CachedOptions, CacheEvictOptions } from './nest/cached.decorator.js';
export { CacheInterceptor, CacheScope } from './nest/cache.interceptor.js';
export type { HttpCacheScope, HttpCacheOptions } from './nest/cache.interceptor.js';
export { assertCacheKey, CacheKeys } from './protocol/keys.js';
export { startValkeyCluster } from './testing/valkey-cluster.js';
export type { ValkeyCluster, ValkeyClusterOptions, ClusterNode, NodeRef } from './testing/valkey-cluster.js';
export { namesOnDistinctOwners, slotOfName, parseClusterNodes } from './testing/valkey-cluster.topology.js';
export type { ClusterNodeView } from './testing/valkey-cluster.topology.js';
