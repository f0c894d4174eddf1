import type { InjectionToken, ModuleMetadata, OptionalFactoryDependency } from '@nestjs/common';
import type { ValkeyConnectionOptions } from '../protocol/connection.js';
import type { QueueDefaults } from '../queue/queue.options.js';
import type { BusOptions } from '../bus/bus.options.js';
import type { CacheOptions } from '../cache/cache.types.js';
import type { FlowOptions } from '../queue/flow.service.js';

/** Options of `EchoMqModule.forRoot`. */
export interface EchoMqModuleOptions {
  /** Where Valkey is. Default `redis://127.0.0.1:6379`. */
  readonly connection?: ValkeyConnectionOptions;
  /** Defaults for every queue. */
  readonly defaults?: Partial<QueueDefaults>;
  /** Per-queue overrides of the defaults, by queue name. */
  readonly queues?: Readonly<Record<string, Partial<QueueDefaults>>>;
  /** Cache options (L1 bounds, default TTL, tombstone window, poll period). */
  readonly cache?: CacheOptions;
  /** Bus options (consumer instance name, payload limit, dead-letter cap). */
  readonly bus?: BusOptions;
  /** How long shutdown waits for running handlers (ms). Default 10,000. */
  readonly shutdownTimeoutMs?: number;
  /**
   * Flows: bounds, the relay's lease and sweep period, the outbox bound; `relay: false` stops this
   * process relaying the outboxes of its `@Processor` / `@Flow` queues (another process must).
   */
  readonly flows?: FlowOptions & { readonly relay?: boolean };
  /** Set false to register services without starting `@Processor` and `@OnEvent` loops. Default true. */
  readonly consumers?: boolean;
  /**
   * Set false to run no schedule loop in this process (docs/queue.md, "Schedules"): its
   * `@Processor` schedules are still upserted, other instances tick them. Default true.
   */
  readonly scheduler?: boolean;
}

/** Options of `EchoMqModule.forRootAsync`. */
export interface EchoMqModuleAsyncOptions {
  /** Modules whose providers the factory injects. */
  readonly imports?: ModuleMetadata['imports'];
  /** Builds the options (may be async), called with the `inject` providers. */
  readonly useFactory: (...args: never[]) => EchoMqModuleOptions | Promise<EchoMqModuleOptions>;
  /** Providers passed to `useFactory`, in order. */
  readonly inject?: (InjectionToken | OptionalFactoryDependency)[];
}
