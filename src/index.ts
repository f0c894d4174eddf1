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
export { wire } from './protocol/wire.js';
export type { WireJob, WireClaim, WireCompletion, ClaimReply } from './protocol/wire.js';
export { QueueService } from './queue/queue.service.js';
export type { EnqueueItem } from './queue/queue.service.js';
export { Consumer } from './queue/consumer.js';
export type { ConsumerConfig, ConsumerLogger } from './queue/consumer.js';
export { BUILTIN_DEFAULTS, MAX_BATCH, resolveDefaults, resolveConsumerOptions } from './queue/queue.options.js';
export type { ResolvedConsumerOptions } from './queue/queue.options.js';
export type { BackoffOptions, QueueDefaults, EnqueueOptions, ProcessorOptions } from './queue/queue.options.js';
export type { Job, JobView, JobStatus, JobCounts, JobHandler } from './queue/job.js';
export { BusService } from './bus/bus.service.js';
export type { BusOptions } from './bus/bus.options.js';
export { eventIdOf, streamIdOf, eventInstant, EVENT_NS } from './bus/event-id.js';
export { topicKeys, TopicKeys } from './protocol/keys.js';
export { EchoMqModule } from './nest/echomq.module.js';
export type { EchoMqModuleOptions, EchoMqModuleAsyncOptions } from './nest/echomq.options.js';
export { Processor } from './nest/processor.decorator.js';
export type { ProcessorMetadata } from './nest/processor.decorator.js';
export { startEmbeddedValkey, freePort } from './testing/embedded-valkey.js';
export type { EmbeddedValkey, EmbeddedValkeyOptions } from './testing/embedded-valkey.js';
