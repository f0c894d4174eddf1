import { Logger, Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { EchoMqConnection } from '../protocol/connection.js';
import { QueueService } from '../queue/queue.service.js';
import { BUILTIN_DEFAULTS, resolveDefaults } from '../queue/queue.options.js';
import { ECHOMQ_OPTIONS } from './echomq.constants.js';
import type { EchoMqModuleAsyncOptions, EchoMqModuleOptions } from './echomq.options.js';
import { ConsumerOrchestrator } from './consumer.orchestrator.js';
import { ProcessorExplorer } from './processor.explorer.js';
import { BusService } from '../bus/bus.service.js';
import { CacheService } from '../cache/cache.service.js';
import { CacheExplorer } from './cache.explorer.js';
import { CacheInterceptor } from './cache.interceptor.js';
import { EventExplorer } from './event.explorer.js';
import { GroupOrchestrator } from './group.orchestrator.js';
import { ScheduleOrchestrator } from './schedule.orchestrator.js';

const services: Provider[] = [
  {
    provide: EchoMqConnection,
    inject: [ECHOMQ_OPTIONS],
    useFactory: async (o: EchoMqModuleOptions) => {
      const conn = new EchoMqConnection(o.connection ?? { host: '127.0.0.1', port: 6379 });
      const logger = new Logger('EchoMQ');
      conn.logger = { warn: (m) => logger.warn(m) };
      await conn.open();
      return conn;
    },
  },
  {
    provide: QueueService,
    inject: [EchoMqConnection, ECHOMQ_OPTIONS],
    useFactory: (conn: EchoMqConnection, o: EchoMqModuleOptions) =>
      new QueueService(conn, resolveDefaults(BUILTIN_DEFAULTS, o.defaults), o.queues ?? {}, {
        logger: { warn: (m: string) => new Logger('EchoMQ').warn(m) },
        ...o.flows,
      }),
  },
  {
    provide: BusService,
    inject: [EchoMqConnection, ECHOMQ_OPTIONS],
    useFactory: (conn: EchoMqConnection, o: EchoMqModuleOptions) => new BusService(conn, o.bus ?? {}),
  },
  {
    provide: CacheService,
    inject: [EchoMqConnection, ECHOMQ_OPTIONS],
    useFactory: (conn: EchoMqConnection, o: EchoMqModuleOptions) => new CacheService(conn, o.cache ?? {}),
  },
  ProcessorExplorer,
  ConsumerOrchestrator,
  EventExplorer,
  GroupOrchestrator,
  ScheduleOrchestrator,
  CacheExplorer,
  CacheInterceptor,
];

/**
 * The EchoMQ module: registers `QueueService` and `BusService` (global), runs every `@Processor`
 * method as a supervised consumer loop and every `@OnEvent` method as a consumer-group loop.
 */
@Module({})
export class EchoMqModule {
  /** Configures EchoMQ with static options. */
  static forRoot(options: EchoMqModuleOptions = {}): DynamicModule {
    // Validate eagerly so a bad default fails at startup with a typed error.
    resolveDefaults(BUILTIN_DEFAULTS, options.defaults);
    return {
      module: EchoMqModule,
      global: true,
      imports: [DiscoveryModule],
      providers: [{ provide: ECHOMQ_OPTIONS, useValue: options }, ...services],
      exports: [QueueService, BusService, CacheService, CacheInterceptor, EchoMqConnection],
    };
  }

  /** Configures EchoMQ from a factory (e.g. reading a ConfigService). */
  static forRootAsync(options: EchoMqModuleAsyncOptions): DynamicModule {
    return {
      module: EchoMqModule,
      global: true,
      imports: [DiscoveryModule, ...(options.imports ?? [])],
      providers: [
        {
          provide: ECHOMQ_OPTIONS,
          inject: options.inject ?? [],
          useFactory: async (...args: never[]) => {
            const o = await options.useFactory(...args);
            resolveDefaults(BUILTIN_DEFAULTS, o.defaults);
            return o;
          },
        },
        ...services,
      ],
      exports: [QueueService, BusService, CacheService, CacheInterceptor, EchoMqConnection],
    };
  }
}
