import type { InjectionToken, ModuleMetadata, OptionalFactoryDependency, Type } from '@nestjs/common';
import type { ValkeyConnectionOptions } from '../core/connection/index.js';
import type { QueueDefaults } from '../queue/queue-options.js';
import type { BusOptions } from '../bus/bus-options.js';
import type { CacheOptions } from '../cache/cache-types.js';
import type { CacheInvalidationRule } from '../follow/cache-follower.js';
import type { FlowOptions } from '../queue/flows/index.js';
import type { TelemetryOptions } from '../telemetry/telemetry-options.js';

/** The module's `cache` options: the `CacheService`'s own, and the Bus topics the cache follows. */
export interface EchoMqCacheOptions extends CacheOptions {
  /**
   * Bus topics this cache follows: each event invalidates the keys and tags a rule names, once
   * per event per namespace, through a consumer group (docs/cache.md, "Invalidation from the
   * Bus"). Run by the Nest module (not with `consumers: false`), or by `CacheFollower`.
   */
  readonly invalidateOn?: readonly CacheInvalidationRule[];
}

/** The `CacheService`'s part of the module's `cache` options (all but `invalidateOn`). */
export function cacheServiceOptions(o: EchoMqCacheOptions | undefined): CacheOptions {
  // Not an object: handed on as it is, for the service's validation to refuse.
  if (o === undefined) return {};
  if (o === null || typeof o !== 'object') return o;
  const { invalidateOn: _rules, ...service } = o;
  return service;
}

/**
 * Ask the module for a throwaway local `valkey-server` (development and tests; refused when
 * `NODE_ENV=production`). Giving no `connection` at all means the same.
 */
export interface EmbeddedConnectionOptions {
  /** `true`: start the throwaway server (stopped after the module's connections close). */
  readonly embedded: true;
}

/** Where Valkey is: a real deployment (`ValkeyConnectionOptions`) or the embedded default. */
export type EchoMqConnectionOption = ValkeyConnectionOptions | EmbeddedConnectionOptions;

/** Options of `EchoMqModule.forRoot` (and what `forRootAsync` resolves to); see docs/nest.md. */
export interface EchoMqModuleOptions {
  /**
   * Where Valkey is. Omitted or `{ embedded: true }`: the module starts a throwaway local
   * `valkey-server` and stops it at shutdown (refused under `NODE_ENV=production`). The module
   * reads no environment variable: pass `{ url: process.env.ECHOMQ_URL }` yourself.
   */
  readonly connection?: EchoMqConnectionOption;
  /** Defaults for every queue. */
  readonly defaults?: Partial<QueueDefaults>;
  /** Per-queue overrides of the defaults, by queue name (a queue named here counts as registered). */
  readonly queues?: Readonly<Record<string, Partial<QueueDefaults>>>;
  /** Cache options (namespace, default TTL, L1 bounds, tombstone window, poll period, followed topics). */
  readonly cache?: EchoMqCacheOptions;
  /** Bus options (consumer instance name, payload limit, dead-letter cap, trim period). */
  readonly bus?: BusOptions;
  /** How long shutdown waits for running handlers (ms, 0..3,600,000). Default 10,000. */
  readonly shutdownTimeoutMs?: number;
  /**
   * Flows: bounds, the relay's lease and sweep period, the outbox bound; `relay: false` stops this
   * process relaying the outboxes of its `@Processor` / `@Flow` queues (another process must).
   */
  readonly flows?: FlowOptions & { readonly relay?: boolean };
  /**
   * `false`: a producer-only app. No `@Processor`, `@Flow` or `@OnEvent` loop starts, and no
   * `@Leader` campaign; the
   * connection is tried once at startup (so `mintId()` works from bootstrap on) and, when Valkey
   * is unreachable, opens on first use instead (the app starts anyway). Default true.
   */
  readonly consumers?: boolean;
  /**
   * Warn once per queue (Nest logger) when `QueueService` enqueues to a queue that no
   * `forFeature` or `queues` entry registers and no `@Processor` / `@Flow` of this app consumes
   * (with `consumers: false`: that no `forFeature` or `queues` entry registers). Default true.
   */
  readonly warnUnknownQueues?: boolean;
  /**
   * Set false to run no schedule loop in this process (docs/queue.md, "Schedules"): its
   * `@Processor` schedules are still upserted, other instances tick them. Default true.
   */
  readonly scheduler?: boolean;
  /**
   * Tracing and OpenTelemetry metrics, used when `@opentelemetry/api` is installed (both default
   * on); the Prometheus counters of `EchoMqMetrics` are always kept (docs/telemetry.md).
   */
  readonly telemetry?: TelemetryOptions;
}

/** One queue of `EchoMqModule.forFeature`. */
export interface QueueRegistration {
  /** The queue's name (the key grammar's rules; checked at registration). */
  readonly name: string;
  /** This queue's overrides of the module defaults (merged over `forRoot`'s `queues[name]`). */
  readonly defaults?: Partial<QueueDefaults>;
}

/**
 * One queue of `EchoMqModule.forFeatureAsync`: its name now (the `@InjectQueue` token must be
 * known when the module is defined), its defaults from `useFactory` when the app starts.
 */
export interface QueueRegistrationAsync {
  /** The queue's name (the key grammar's rules; checked at registration). */
  readonly name: string;
  /** Modules exporting what the factory injects. */
  readonly imports?: ModuleMetadata['imports'];
  /** Tokens injected into `useFactory`. */
  readonly inject?: (InjectionToken | OptionalFactoryDependency)[];
  /** This queue's overrides of the module defaults (validated as `forFeature`'s `defaults`), or undefined for none. */
  readonly useFactory: (...args: never[]) => Partial<QueueDefaults> | undefined | Promise<Partial<QueueDefaults> | undefined>;
}

/** A class that builds the module options, for `forRootAsync({ useClass | useExisting })`. */
export interface EchoMqOptionsFactory {
  /** The module options (validated like `forRoot`'s). */
  createEchoMqOptions(): EchoMqModuleOptions | Promise<EchoMqModuleOptions>;
}

/** Options of `EchoMqModule.forRootAsync`: exactly one of `useFactory`, `useClass`, `useExisting`. */
export interface EchoMqModuleAsyncOptions {
  /** Modules exporting what the factory (or the factory class) injects. */
  readonly imports?: ModuleMetadata['imports'];
  /** Builds the options from the injected `inject` tokens. */
  readonly useFactory?: (...args: never[]) => EchoMqModuleOptions | Promise<EchoMqModuleOptions>;
  /** Tokens injected into `useFactory`. */
  readonly inject?: (InjectionToken | OptionalFactoryDependency)[];
  /** A factory class the module instantiates (in its own scope) and asks for the options. */
  readonly useClass?: Type<EchoMqOptionsFactory>;
  /** An existing provider (from `imports`) asked for the options. */
  readonly useExisting?: Type<EchoMqOptionsFactory>;
}
