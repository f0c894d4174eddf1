/**
 * The typed script calls (docs/protocol.md): one wrapper per script, built from the key grammar
 * and the manifest's arguments, with its reply parsed — queue, claim, round, park, policy, flow,
 * schedule, Bus, admin and coordination. The rest of src/ imports this folder through this file only.
 */
export { adminWire, busAdminWire } from './admin.js';
export type { AdminReply, BulkReply, PurgeableStatus, RegistryKind } from './admin.js';
export { BUS_BATCH_LIMIT, EXPIRE_LIMIT, busWire } from './bus.js';
export type { PublishItem, TrimReply } from './bus.js';
export type { ClaimFlow, ClaimReply, WireClaim } from './claim-reply.js';
export { COORD_TTL_MS, FENCE_CHECK_LUA, SEMAPHORE_MAX_LIMIT, coordWire, leaseCall, semaphoreCall } from './coordination.js';
export type { CoordOp, LeaseReply, SemaphoreReply } from './coordination.js';
export { flowWire } from './flow.js';
export type { DeliverOutcome, Delivery, OutboxEntry, WireFlowEdge, WireFlowNode } from './flow.js';
export { parkCall, parkSpot, parkedClaimCall, parseInboxLease } from './park.js';
export type { ParkSpot } from './park.js';
export { declarePolicy, decodePolicy, describePolicy, pauseLaneWire, readPolicy, samePolicy, writePolicy } from './policy.js';
export type { ClaimLimits, HashReader, PolicyReply, StoredPolicy } from './policy.js';
export { calls, wire } from './queue.js';
export type { CompleteRelayingReply, ReapReply, ReapedJob, WireCompletion, WireJob } from './queue.js';
export { roundCall, runRound } from './round.js';
export type { RoundParts } from './round.js';
export { scheduleWire } from './schedule.js';
export type { TickOutcome, UpsertOutcome, WireTick } from './schedule.js';
export { LATENCY_BOUNDS_MS, LATENCY_BUCKETS, STATS_FIELDS, STATS_HOUR_TTL_S, STATS_MINUTE_TTL_S, latencyBucket, statsCall } from './stats.js';
export type { StatsWritten } from './stats.js';
