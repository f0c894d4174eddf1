/**
 * `@echomq/nestjs`: what a NestJS application uses — the module and its options, the services,
 * the decorators, the job, event, flow and cache types, `EchoMqError` and the `errors` namespace.
 * The wire for other runtimes is `@echomq/nestjs/protocol`; test helpers are `@echomq/nestjs/testing`;
 * the loops without Nest, with no stability promise, are `@echomq/nestjs/unstable`.
 *
 * @module @echomq/nestjs
 */

import { warnOnNestCopies } from './nest/nest-copies.js';

// A symlinked install loads a second @nestjs/core: say so before Nest's DI fails obscurely.
warnOnNestCopies();

// The module and its options.
export { EchoMqModule } from './nest/echomq-module.js';
export type { EchoMqModuleOptions, EchoMqModuleAsyncOptions } from './nest/echomq-options.js';
export type { EchoMqOptionsFactory, QueueRegistration, QueueRegistrationAsync, EchoMqConnectionOption, EmbeddedConnectionOptions, EchoMqCacheOptions } from './nest/echomq-options.js';
export { Queue } from './nest/queue-handle.js';
export { InjectQueue, getQueueToken } from './nest/inject-queue-decorator.js';
export { EchoMqEmbeddedServer } from './nest/embedded-default.js';
export type { ValkeyConnectionOptions } from './core/connection/index.js';
export type { BootRetryOptions } from './core/connection/index.js';
export type { Json, PayloadCodec } from './core/codec.js';

// Errors: every refusal is an `EchoMqError` with a stable `code` (the `EchoMqErrorCode` union);
// every class is in the `errors` namespace (`errors.StaleTokenError`, …) for `instanceof`.
export { EchoMqError } from './core/errors.js';
export type { EchoMqErrorCode } from './core/errors.js';
/** Every EchoMQ error class, for `instanceof` (`errors.StaleTokenError`, …); `code` says the same. */
export * as errors from './core/errors.js';
// What a handler throws or sees as its signal's reason (not EchoMqErrors).
export { FatalJobError, WaitingForChildren, JobCancelledError, JobTimeoutError } from './queue/job-signals.js';

// The Queue.
export { QueueService } from './queue/queue-service.js';
export type { EnqueueItem } from './queue/queue-options.js';
export type { QueueDefaults, EnqueueOptions } from './queue/queue-options.js';
export type { ProcessorOptions, BatchOptions } from './queue/processor-options.js';
export type { DedupOptions } from './queue/dedup-options.js';
export type { BackoffOptions, RateLimit } from './queue/base-options.js';
export type { LaneOptions, LaneSettings, PolicyOptions } from './queue/lane-policy.js';
export type { BatchHandler, BatchOutcome } from './queue/batch-handler.js';
export type { Job, JobView, AttemptView, AttemptOutcome, UndecodedText, JobStatus, JobCounts, JobHandler, QueueEvent, QueueEventKind } from './queue/job.js';
export { Processor } from './nest/processor-decorator.js';

// Schedules (recurring jobs).
export type { ScheduleSpec, ScheduleOptions, ScheduleInfo, MissedPolicy, ProcessorSchedule, TickRecord } from './queue/schedules/index.js';
export type { UpsertOutcome } from './core/wire/index.js';

// Flows.
export { FlowService } from './queue/flows/index.js';
export type { FlowOptions } from './queue/flows/index.js';
export { Flow } from './nest/flow-decorator.js';
export type { FlowStepOptions } from './nest/flow-decorator.js';
export type { ChildResult, FlowBounds, FlowChildren, FlowJob, FlowNode, FlowSpec, FlowTreeNode, GetFlowOptions } from './queue/flows/index.js';
export type { ChildFailurePolicy, ChildOutcome, FlowChildView, FlowView } from './queue/job.js';

// The Bus.
export { BusService } from './bus/bus-service.js';
export type { BusOptions } from './bus/bus-options.js';
export type { ReplayedEvent, RetentionPolicy, TrimResult, ReplayOptions, DeadLetter } from './bus/bus-types.js';
export { OnEvent } from './nest/on-event-decorator.js';
export { OnQueueEvent } from './nest/on-queue-event-decorator.js';
export type { OnQueueEventOptions } from './nest/on-queue-event-decorator.js';
export type { QueueEventDetail, QueueEventName } from './queue/event-log-reader.js';
export type { OnEventOptions, GroupStart, BusEvent, EventHandler } from './bus/consumer-group/index.js';
export type { GroupLoss, GroupLossKind } from './bus/consumer-group/index.js';

// The Cache.
export { CacheService } from './cache/cache-service.js';
export type { CacheApi, CacheEntryOptions, CacheOptions, CacheStats, Loader } from './cache/cache-types.js';
export { Cached, CacheEvict } from './nest/cached-decorator.js';
export type { CachedOptions, CacheEvictOptions, KeyOf, TagsOf } from './nest/cached-decorator.js';
export { CacheInterceptor, CacheScope } from './nest/cache-interceptor.js';
export type { HttpCacheScope, HttpCacheOptions, HttpTagsOf, HttpRequestLike } from './nest/cache-interceptor.js';
export type { CacheInvalidationRule } from './follow/cache-follower.js';

// Coordination: fenced leases, counting semaphores, leader election (docs/coordination.md).
// A lost lease's signal aborts with `errors.CoordinationLostError` (code EMQ_LEASE_LOST).
export { CoordinationService } from './coordination/index.js';
export type { CoordinationOptions, Election, ElectionOptions, LeaderTerm, Lease, LeaseOptions, LeaseState, Permit, SemaphoreOptions } from './coordination/index.js';
export { Leader } from './nest/leader-decorator.js';
export type { LeaderOptions } from './nest/leader-decorator.js';

export { EchoMqExceptionFilter, echoMqErrorReply } from './nest/exception-filter.js';
export type { EchoMqErrorBody, EchoMqErrorReply } from './nest/exception-filter.js';

// The operator plane (docs/admin.md).
export { QueueAdmin } from './admin/queue-admin.js';
export type { QueueInfo, NamePage, BulkOptions, PurgeOptions } from './admin/queue-admin.js';
export type { EntryProblem } from './admin/registry.js';
export type { StoredMetricsOptions, MetricsPoint, LatencySummary, StoredMetrics } from './admin/queue-metrics.js';
export type { ProcessList, ProcessView, ProcessState } from './admin/processes.js';
export type { ProcessInfo, ProcessQueue, ProcessGroup } from './core/connection/index.js';
export type { JobSummary, JobPage, JobListOptions } from './admin/job-pages.js';
export type { JobCursor, ListableStatus } from './admin/job-cursor.js';
export type { JobSearchOptions, JobSearchPage, JobSearchCursor, PayloadFieldFilter } from './admin/job-search.js';
export type { DeadLetterEntry, DeadLetterPage, DeadLetterPageOptions } from './admin/dead-letter-pages.js';
export type { BulkReply, PurgeableStatus } from './core/wire/index.js';
export { BusAdmin } from './admin/bus-admin.js';
export type { TopicInfo, GroupInfo } from './admin/bus-admin.js';
export { CacheAdmin } from './admin/cache-admin.js';
export type { CacheNamespaceInfo, CacheAdminStats } from './admin/cache-admin.js';
// Telemetry (docs/telemetry.md).
export { EchoMqMetrics } from './nest/metrics-service.js';
export { metricsController } from './nest/metrics-controller.js';
export type { MetricsControllerOptions } from './nest/metrics-controller.js';
export { prometheusContentType } from './telemetry/prometheus-format.js';
export type { TelemetryOptions } from './telemetry/telemetry-options.js';
export type { GroupMetrics, HistogramSnapshot, MetricsSnapshot, QueueMetrics } from './telemetry/metrics-snapshot.js';

// The web dashboard (docs/dashboard.md).
export { EchoMqDashboardModule } from './dashboard/dashboard-module.js';
export type { EchoMqDashboardOptions } from './dashboard/dashboard-options.js';
