import { Logger, type Provider } from '@nestjs/common';
import { EchoMqConnection, type ValkeyConnectionOptions } from '../core/connection/index.js';
import { openAtBoot, resolveBootRetry } from '../core/connection/index.js';
import { EchoMqError, InvalidOptionError } from '../core/errors.js';
import { QueueService } from '../queue/queue-service.js';
import { BUILTIN_DEFAULTS, resolveDefaults } from '../queue/queue-options.js';
import { BusService } from '../bus/bus-service.js';
import { CacheService } from '../cache/cache-service.js';
import { ECHOMQ_OPTIONS } from './echomq-constants.js';
import { cacheServiceOptions, type EchoMqModuleAsyncOptions, type EchoMqModuleOptions, type EchoMqOptionsFactory, type QueueRegistration, type QueueRegistrationAsync } from './echomq-options.js';
import { validateAsyncOptions, validateAsyncRegistration, validateModuleOptions, validateRegistration } from './echomq-validation.js';
import { ECHOMQ_EMBEDDED, EchoMqEmbeddedServer, startEmbeddedDefault, type EmbeddedDefault } from './embedded-default.js';
import { QueueRegistry, RegisteredQueueService } from './queue-registry.js';
import { Queue } from './queue-handle.js';
import { getQueueToken } from './inject-queue-decorator.js';
import { ConsumerOrchestrator } from './consumer-orchestrator.js';
import { ProcessorExplorer } from './processor-explorer.js';
import { CacheExplorer } from './cache-explorer.js';
import { CacheFollowOrchestrator } from './cache-follow-orchestrator.js';
import { CacheInterceptor } from './cache-interceptor.js';
import { EventExplorer } from './event-explorer.js';
import { GroupOrchestrator } from './consumer-group-orchestrator.js';
import { ScheduleOrchestrator } from './schedule-orchestrator.js';
import { LocalQueueEvents } from './local-queue-events.js';
import { QueueEventExplorer } from './queue-event-explorer.js';
import { QueueEventOrchestrator } from './queue-event-orchestrator.js';
import { QueueAdmin } from '../admin/queue-admin.js';
import { BusAdmin } from '../admin/bus-admin.js';
import { CacheAdmin } from '../admin/cache-admin.js';
import { EchoMqTelemetry } from '../telemetry/telemetry.js';
import { EchoMqMetrics } from './metrics-service.js';
import { CoordinationService } from '../coordination/index.js';
import { escapeControls } from '../core/control-chars.js';
import { LeaderExplorer } from './leader-explorer.js';
import { LeaderOrchestrator } from './leader-orchestrator.js';

/**
 * A producer-only app's open (`consumers: false`): one attempt now, so `mintId()` works from
 * bootstrap on (it mints under the node lease the open takes); when Valkey is unreachable (or
 * loading) the app starts anyway, warned, and the connection opens on first use or as soon as
 * the client's background reconnect reaches Valkey. A refusal waiting cannot fix (credentials,
 * ACL, an evicting policy) fails the bootstrap, as it does for a consuming app.
 */
async function openIfReachable(conn: EchoMqConnection, warn: (message: string) => void): Promise<void> {
  conn.openOnFirstUse();
  try {
    await conn.ensureOpen();
  } catch (err) {
    if (!(err instanceof EchoMqError) || (err.code !== 'EMQ_UNAVAILABLE' && err.code !== 'EMQ_LOADING')) throw err;
    warn(`Valkey is not reachable at startup (consumers: false, so the app starts anyway): ${err.message}; the connection opens on first use, and mintId() throws EMQ_UNAVAILABLE until it has`);
  }
}

/** What the root module exports to the whole app (it is global). */
export const ROOT_EXPORTS = [QueueService, BusService, CacheService, QueueAdmin, BusAdmin, CacheAdmin, CacheInterceptor, EchoMqConnection, QueueRegistry, ECHOMQ_EMBEDDED, EchoMqEmbeddedServer, EchoMqTelemetry, EchoMqMetrics, CoordinationService];

/**
 * The root module's providers after the options: the embedded default (when asked for), the
 * connection (opened at init, waiting for Valkey with `retryAtBoot`; with `consumers: false`
 * tried once at init, else opened on first use), the services, the
 * explorers and orchestrators.
 */
export const ROOT_PROVIDERS: Provider[] = [
  { provide: ECHOMQ_EMBEDDED, inject: [ECHOMQ_OPTIONS], useFactory: startEmbeddedDefault },
  { provide: EchoMqEmbeddedServer, useExisting: ECHOMQ_EMBEDDED },
  {
    provide: EchoMqConnection,
    inject: [ECHOMQ_OPTIONS, ECHOMQ_EMBEDDED],
    useFactory: async (o: EchoMqModuleOptions, embedded: EmbeddedDefault | null) => {
      const target: ValkeyConnectionOptions = embedded ? { url: embedded.url } : (o.connection as ValkeyConnectionOptions);
      const conn = new EchoMqConnection(target);
      const logger = new Logger('EchoMQ');
      conn.logger = { warn: (m) => logger.warn(m), error: (m) => logger.error(m) };
      if (o.consumers === false) await openIfReachable(conn, (m) => logger.warn(m));
      else await openAtBoot(conn, resolveBootRetry(target.retryAtBoot), (m) => logger.warn(m));
      return conn;
    },
  },
  QueueRegistry,
  { provide: EchoMqTelemetry, inject: [ECHOMQ_OPTIONS], useFactory: (o: EchoMqModuleOptions) => EchoMqTelemetry.create(o.telemetry) },
  EchoMqMetrics,
  {
    provide: QueueService,
    inject: [EchoMqConnection, ECHOMQ_OPTIONS, QueueRegistry, EchoMqTelemetry],
    useFactory: (conn: EchoMqConnection, o: EchoMqModuleOptions, registry: QueueRegistry, telemetry: EchoMqTelemetry) =>
      new RegisteredQueueService(
        conn,
        resolveDefaults(BUILTIN_DEFAULTS, o.defaults),
        registry,
        {
          logger: { warn: (m: string) => new Logger('EchoMQ').warn(m) },
          onReleased: telemetry.tracing ? (r, t0) => telemetry.tracing?.flowRelease(r, t0) : undefined,
          ...o.flows,
        },
        telemetry,
      ),
  },
  {
    provide: BusService,
    inject: [EchoMqConnection, ECHOMQ_OPTIONS, EchoMqTelemetry],
    useFactory: (conn: EchoMqConnection, o: EchoMqModuleOptions, telemetry: EchoMqTelemetry) => new BusService(conn, o.bus ?? {}, telemetry.tracing),
  },
  {
    provide: CacheService,
    inject: [EchoMqConnection, ECHOMQ_OPTIONS],
    useFactory: (conn: EchoMqConnection, o: EchoMqModuleOptions) => new CacheService(conn, cacheServiceOptions(o.cache)),
  },
  { provide: QueueAdmin, inject: [EchoMqConnection, QueueService], useFactory: (conn: EchoMqConnection, q: QueueService) => new QueueAdmin(conn, q) },
  { provide: BusAdmin, inject: [EchoMqConnection, BusService], useFactory: (conn: EchoMqConnection, b: BusService) => new BusAdmin(conn, b) },
  { provide: CacheAdmin, inject: [EchoMqConnection, CacheService], useFactory: (conn: EchoMqConnection, c: CacheService) => new CacheAdmin(conn, c) },
  {
    // Closed by LeaderOrchestrator before shutdown, before the connection closes.
    provide: CoordinationService,
    inject: [EchoMqConnection],
    useFactory: (conn: EchoMqConnection) => {
      const logger = new Logger('EchoMQ');
      return new CoordinationService(conn, { logger: { warn: (m) => logger.warn(escapeControls(m)), error: (m, e) => logger.error(escapeControls(m), e) } });
    },
  },
  ProcessorExplorer,
  LocalQueueEvents,
  QueueEventExplorer,
  QueueEventOrchestrator,
  ConsumerOrchestrator,
  EventExplorer,
  GroupOrchestrator,
  ScheduleOrchestrator,
  CacheExplorer,
  CacheFollowOrchestrator,
  CacheInterceptor,
  LeaderExplorer,
  LeaderOrchestrator,
];

/**
 * The providers of `forRootAsync` that resolve the options, by the Nest conventions: `useFactory`
 * (with `inject`), `useClass` (instantiated here) or `useExisting` (from `imports`); the result is
 * validated as `forRoot`'s options are. Exactly one style must be given (EMQ_BAD_OPTION).
 */
export function asyncOptionsProviders(a: EchoMqModuleAsyncOptions): Provider[] {
  validateAsyncOptions(a);
  const styles = [a.useFactory, a.useClass, a.useExisting].filter((s) => s !== undefined).length;
  if (styles !== 1) throw new InvalidOptionError(`forRootAsync takes exactly one of useFactory, useClass, useExisting (got ${styles})`);
  if (a.inject && !a.useFactory) throw new InvalidOptionError('forRootAsync: inject goes with useFactory');
  if (a.useFactory) {
    const make = a.useFactory;
    return [{ provide: ECHOMQ_OPTIONS, inject: a.inject ?? [], useFactory: async (...args: never[]) => validateModuleOptions(await make(...args)) }];
  }
  const factory = (a.useClass ?? a.useExisting)!;
  const options: Provider = {
    provide: ECHOMQ_OPTIONS,
    inject: [factory],
    useFactory: async (f: EchoMqOptionsFactory) => validateModuleOptions(await f.createEchoMqOptions()),
  };
  return a.useClass ? [options, { provide: a.useClass, useClass: a.useClass }] : [options];
}

/**
 * The providers of `forFeature`: one typed `Queue` handle per entry, under `getQueueToken(name)`,
 * registering its queue (and defaults) as the handle is created.
 */
export function featureProviders(queues: readonly QueueRegistration[]): Provider[] {
  if (!Array.isArray(queues)) throw new InvalidOptionError('forFeature takes an array of { name, defaults? }');
  queues.forEach((q, i) => validateRegistration(q, i));
  return queues.map((q) => ({
    provide: getQueueToken(q.name),
    inject: [QueueRegistry, QueueService],
    useFactory: (registry: QueueRegistry, service: QueueService) => {
      registry.register(q);
      return new Queue(q.name, service);
    },
  }));
}

/**
 * The providers of `forFeatureAsync`: one typed `Queue` handle per entry, whose defaults come from
 * the entry's `useFactory` (with its `inject`) when the app starts, validated as `forFeature`'s
 * (EMQ_BAD_OPTION naming `[i].defaults.<key>`) before the queue is registered.
 */
export function featureAsyncProviders(queues: readonly QueueRegistrationAsync[]): Provider[] {
  if (!Array.isArray(queues)) throw new InvalidOptionError('forFeatureAsync takes an array of { name, imports?, inject?, useFactory }');
  queues.forEach((q, i) => validateAsyncRegistration(q, i));
  return queues.map((q, i) => ({
    provide: getQueueToken(q.name),
    inject: [QueueRegistry, QueueService, ...(q.inject ?? [])],
    useFactory: async (registry: QueueRegistry, service: QueueService, ...args: never[]) => {
      const r: QueueRegistration = { name: q.name, defaults: (await q.useFactory(...args)) ?? undefined };
      validateRegistration(r, i, 'forFeatureAsync queue options');
      registry.register(r);
      return new Queue(q.name, service);
    },
  }));
}
