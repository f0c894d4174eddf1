/**
 * `@echomq/nestjs/protocol`: the wire, for other runtimes and low-level use — branded ids, the key
 * grammar and slot law, the codec, the script registry and one typed call per script (`wire`,
 * `calls`, `busWire`, `flowWire`, `scheduleWire`, `adminWire`), the connection and its node lease.
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
export { wire, calls } from './core/wire.js';
export type { ScriptCall } from './core/scripts.js';
export type { CompleteRelayingReply } from './core/wire.js';
export { roundCall, runRound } from './core/round-wire.js';
export type { RoundParts } from './core/round-wire.js';
export { parkSpot, parkCall, parkedClaimCall } from './core/park-wire.js';
export type { ParkSpot } from './core/park-wire.js';
export { adminWire, busAdminWire } from './core/admin-wire.js';
export type { AdminReply, RegistryKind } from './core/admin-wire.js';
export type { WireJob, WireClaim, ClaimFlow, WireCompletion, ClaimReply, ReapReply, ReapedJob } from './core/wire.js';
export type { ClaimLimits, PolicyReply, HashReader } from './core/policy-wire.js';
export { readPolicy, writePolicy, decodePolicy, samePolicy, describePolicy } from './core/policy-wire.js';
export { encodeExtras, decodeExtras, MAX_EXTRAS_BYTES } from './core/extras.js';
export type { JobExtras } from './core/extras.js';
export { busWire, BUS_BATCH_LIMIT } from './core/bus-wire.js';
export type { PublishItem } from './core/bus-wire.js';
export type { TrimReply } from './core/bus-wire.js';
export { flowWire } from './core/flow-wire.js';
export type { WireFlowNode, WireFlowEdge, DeliverOutcome, Delivery, OutboxEntry } from './core/flow-wire.js';
export { scheduleWire } from './core/schedule-wire.js';
export type { WireTick, TickOutcome } from './core/schedule-wire.js';

// The connection.
export { EchoMqConnection, createClient } from './core/connection.js';
export type { ValkeyClient } from './core/connection.js';
export type { ClientRole } from './core/client-setup.js';
export type { ConnectionLogger, EvictionPolicyState, EvictionPolicyListener } from './core/eviction-policy.js';
export { NodeLease } from './core/node-lease.js';
export { openAtBoot, resolveBootRetry } from './core/boot-retry.js';
export type { ResolvedBootRetry } from './core/boot-retry.js';
export type { NodeLeaseOptions, LeaseClient } from './core/node-lease.js';
