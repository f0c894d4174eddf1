/**
 * `@echomq/nestjs/protocol`: the wire, for other runtimes and low-level use — branded ids, the key
 * grammar and slot law, the codec, the script registry and one typed call per script (`wire`,
 * `calls`, `busWire`, `flowWire`, `scheduleWire`, `adminWire`, `coordWire`), the connection and its node lease.
 * It exports no loop and no service: those are the main entry's (and, without Nest and without a
 * stability promise, `@echomq/nestjs/unstable`'s). Errors are exported by the main entry.
 *
 * @module @echomq/nestjs/protocol
 */

// Branded ids.
export { IdMinter, isBrandedId, assertBrandedId, parseId, composeId, encodeBody, decodeBody, ID_EPOCH_MS } from './core/ids.js';
export type { Snowflake } from './core/ids.js';
export { EVENT_NS, eventIdOf, streamIdOf, eventInstant } from './core/event-id.js';

// Keys, the slot law, the codec.
export { assertName, queueKeys, QueueKeys, globalKeys, MAX_NAME_LENGTH, topicKeys, TopicKeys, assertCacheKey, CacheKeys } from './core/keys.js';
export { crc16, keySlot } from './core/slot.js';
export { encodePayload, decodePayload, DEFAULT_MAX_PAYLOAD_BYTES } from './core/codec.js';

// Scripts and the typed calls on them.
export { PROTOCOL_VERSION, SCRIPT_NAMES, scripts, sha1, runScript } from './core/scripts.js';
export type { ScriptName, LoadedScript, ScriptClient, ScriptPipeline } from './core/scripts.js';
export { fromReplyError } from './core/reply-errors.js';
export { wire, calls } from './core/wire/index.js';
export type { ScriptCall } from './core/scripts.js';
export type { CompleteRelayingReply } from './core/wire/index.js';
export { roundCall, runRound } from './core/wire/index.js';
export type { RoundParts } from './core/wire/index.js';
export { parkSpot, parkCall, parkedClaimCall } from './core/wire/index.js';
export type { ParkSpot } from './core/wire/index.js';
export { adminWire, busAdminWire } from './core/wire/index.js';
export type { AdminReply, RegistryKind } from './core/wire/index.js';
export type { WireJob, WireClaim, ClaimFlow, WireCompletion, ClaimReply, ReapReply, ReapedJob } from './core/wire/index.js';
export type { ClaimLimits, PolicyReply, HashReader, StoredPolicy } from './core/wire/index.js';
export { readPolicy, writePolicy, decodePolicy, samePolicy, describePolicy } from './core/wire/index.js';
export { encodeExtras, decodeExtras, MAX_EXTRAS_BYTES } from './core/extras.js';
export type { JobExtras } from './core/extras.js';
export { busWire, BUS_BATCH_LIMIT } from './core/wire/index.js';
export type { PublishItem } from './core/wire/index.js';
export type { TrimReply } from './core/wire/index.js';
export { flowWire } from './core/wire/index.js';
export type { WireFlowNode, WireFlowEdge, DeliverOutcome, Delivery, OutboxEntry } from './core/wire/index.js';
export { scheduleWire } from './core/wire/index.js';
export type { WireTick, TickOutcome } from './core/wire/index.js';
export { CoordKeys } from './core/keys.js';
export { coordWire, leaseCall, semaphoreCall, FENCE_CHECK_LUA, COORD_TTL_MS, SEMAPHORE_MAX_LIMIT } from './core/wire/index.js';
export type { CoordOp, LeaseReply, SemaphoreReply } from './core/wire/index.js';

// The connection.
export { EchoMqConnection, createClient } from './core/connection/index.js';
export type { ValkeyClient } from './core/connection/index.js';
export type { ClientRole } from './core/connection/index.js';
export type { ConnectionLogger, EvictionPolicyState, EvictionPolicyListener } from './core/connection/index.js';
export { NodeLease } from './core/connection/index.js';
export { ECHOMQ_VERSION, MAX_PROCESS_INFO_BYTES, ProcessDescription } from './core/connection/index.js';
export type { ProcessPart } from './core/connection/index.js';
export { openAtBoot, resolveBootRetry } from './core/connection/index.js';
export type { ResolvedBootRetry } from './core/connection/index.js';
export type { NodeLeaseOptions, LeaseClient } from './core/connection/index.js';
