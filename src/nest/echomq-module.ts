import { Inject, Module, Optional, type DynamicModule, type OnApplicationShutdown } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ECHOMQ_OPTIONS } from './echomq-constants.js';
import type { EchoMqModuleAsyncOptions, EchoMqModuleOptions, QueueRegistration, QueueRegistrationAsync } from './echomq-options.js';
import { validateModuleOptions } from './echomq-validation.js';
import { ECHOMQ_EMBEDDED, type EmbeddedDefault } from './embedded-default.js';
import { getQueueToken } from './inject-queue-decorator.js';
import { ROOT_EXPORTS, ROOT_PROVIDERS, asyncOptionsProviders, featureAsyncProviders, featureProviders } from './echomq-providers.js';

/** The module `EchoMqModule.forFeature` returns: the typed queue handles of its entries. */
@Module({})
export class EchoMqFeatureModule {}

/**
 * The EchoMQ module (global): `forRoot` / `forRootAsync` once in the app provide `QueueService`,
 * `BusService`, `CacheService`, `CoordinationService` and run every `@Processor`, `@Flow` and
 * `@OnEvent` method as a supervised loop and every `@Leader` method as a campaign; `forFeature` in
 * any module registers queues for `@InjectQueue`. See docs/nest.md.
 */
@Module({})
export class EchoMqModule implements OnApplicationShutdown {
  /** @internal Nest injects the embedded server the module started, if any. */
  constructor(@Optional() @Inject(ECHOMQ_EMBEDDED) private readonly embedded?: EmbeddedDefault | null) {}

  /** Configures EchoMQ with static options, validated now (typed errors, EMQ_BAD_OPTION). */
  static forRoot(options: EchoMqModuleOptions = {}): DynamicModule {
    validateModuleOptions(options);
    return {
      module: EchoMqModule,
      global: true,
      imports: [DiscoveryModule],
      providers: [{ provide: ECHOMQ_OPTIONS, useValue: options }, ...ROOT_PROVIDERS],
      exports: ROOT_EXPORTS,
    };
  }

  /**
   * Configures EchoMQ from `useFactory` (with `inject`), `useClass` or `useExisting` (an
   * `EchoMqOptionsFactory`); the options are validated as `forRoot`'s when they resolve.
   */
  static forRootAsync(options: EchoMqModuleAsyncOptions): DynamicModule {
    return {
      module: EchoMqModule,
      global: true,
      imports: [DiscoveryModule, ...(options.imports ?? [])],
      providers: [...asyncOptionsProviders(options), ...ROOT_PROVIDERS],
      exports: ROOT_EXPORTS,
    };
  }

  /**
   * Registers queues for this module: `@InjectQueue(name)` then injects a typed `Queue<P, R>`
   * handle. Names and defaults are checked now (EMQ_BAD_NAME / EMQ_BAD_OPTION); `forRoot` or
   * `forRootAsync` must be imported once in the app.
   */
  static forFeature(queues: readonly QueueRegistration[]): DynamicModule {
    const providers = featureProviders(queues);
    return { module: EchoMqFeatureModule, providers, exports: queues.map((q) => getQueueToken(q.name)) };
  }

  /**
   * `forFeature` with each queue's defaults from a factory (`useFactory` with `inject`, from
   * `imports`), resolved when the app starts and validated as `forFeature`'s (EMQ_BAD_OPTION naming
   * the path); names and keys are checked now.
   */
  static forFeatureAsync(queues: readonly QueueRegistrationAsync[]): DynamicModule {
    const providers = featureAsyncProviders(queues);
    const imports = queues.flatMap((q) => q.imports ?? []);
    return { module: EchoMqFeatureModule, imports, providers, exports: queues.map((q) => getQueueToken(q.name)) };
  }

  /**
   * Stops the embedded default server, if the module started one. A module class's hook runs after
   * every provider of its module has shut down, so EchoMQ's connections are closed by then.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.embedded?.stop();
  }
}
