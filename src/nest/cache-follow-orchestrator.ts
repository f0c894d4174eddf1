import { Inject, Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { EchoMqConnection } from '../core/connection/index.js';
import { CacheService } from '../cache/cache-service.js';
import { CacheFollower, resolveInvalidationRules } from '../follow/cache-follower.js';
import { ECHOMQ_OPTIONS } from './echomq-constants.js';
import type { EchoMqModuleOptions } from './echomq-options.js';

/**
 * Starts the consumer groups of `cache.invalidateOn` after bootstrap and stops them before
 * shutdown (as `@OnEvent` loops are). `consumers: false` starts none: another instance of the
 * group does the invalidating, and coherence brings it to this one's L1.
 */
@Injectable()
export class CacheFollowOrchestrator implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('EchoMQ');
  private follower?: CacheFollower;

  constructor(
    @Inject(ECHOMQ_OPTIONS) private readonly options: EchoMqModuleOptions,
    private readonly conn: EchoMqConnection,
    private readonly cache: CacheService,
  ) {}

  /** The running follower, when `cache.invalidateOn` has rules and consumers run. */
  get running(): CacheFollower | undefined {
    return this.follower;
  }

  async onApplicationBootstrap(): Promise<void> {
    const rules = resolveInvalidationRules(this.options.cache?.invalidateOn, this.cache.namespace);
    if (this.options.consumers === false || rules.length === 0) return;
    const bus = this.options.bus ?? {};
    const follower = new CacheFollower(this.conn, this.cache, rules, {
      instance: bus.instance,
      deadCap: bus.deadCap,
      logger: { warn: (m) => this.logger.warn(m), error: (m, e) => this.logger.error(m, e) },
    });
    this.follower = follower;
    await follower.start();
    for (const r of rules) this.logger.log(`cache namespace "${r.namespace}" follows topic "${r.topic}" in group "${r.group}"`);
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.follower?.stop(this.options.shutdownTimeoutMs ?? 10_000);
    this.follower = undefined;
  }
}
