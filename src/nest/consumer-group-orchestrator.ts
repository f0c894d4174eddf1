import { Inject, Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { Subject, type Subscription } from 'rxjs';
import { EchoMqConnection } from '../core/connection/index.js';
import { GroupConsumer } from '../bus/consumer-group/index.js';
import type { GroupLoss } from '../bus/consumer-group/index.js';
import { ECHOMQ_OPTIONS } from './echomq-constants.js';
import type { EchoMqModuleOptions } from './echomq-options.js';
import { EventExplorer } from './event-explorer.js';
import { EchoMqTelemetry } from '../telemetry/telemetry.js';

/**
 * Starts one consumer-group loop per `@OnEvent` after bootstrap and stops them before shutdown
 * (running handlers get `shutdownTimeoutMs`, then are aborted; their entries stay pending and
 * are reclaimed later). Losses (lost entries, recreated groups, dead letters) are logged as
 * warnings and emitted on `losses$`. `consumers: false` starts no loops.
 */
@Injectable()
export class GroupOrchestrator implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('EchoMQ');
  private readonly groups: GroupConsumer[] = [];
  private readonly subs: Subscription[] = [];
  /** Every loss reported by this app's group loops. */
  readonly losses$ = new Subject<GroupLoss>();

  constructor(
    @Inject(ECHOMQ_OPTIONS) private readonly options: EchoMqModuleOptions,
    private readonly conn: EchoMqConnection,
    private readonly explorer: EventExplorer,
    private readonly telemetry: EchoMqTelemetry,
  ) {}

  /** The running group loops. */
  get consumers(): readonly GroupConsumer[] {
    return this.groups;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.options.consumers === false) return;
    const bus = this.options.bus ?? {};
    for (const h of this.explorer.handlers) {
      const g = new GroupConsumer(this.conn, {
        topic: h.topic,
        options: h.options,
        handler: h.handler,
        instance: bus.instance,
        deadCap: bus.deadCap,
        logger: { warn: (m) => this.logger.warn(m), error: (m, e) => this.logger.error(m, e) },
        tracer: this.telemetry.tracing,
      });
      this.subs.push(g.losses$.subscribe((l) => this.losses$.next(l)));
      await g.start();
      this.groups.push(g);
      this.logger.log(`${h.name} consumes "${h.topic}" in group "${g.group}" as ${g.consumer} (concurrency ${g.concurrency})`);
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    const deadline = this.options.shutdownTimeoutMs ?? 10_000;
    await Promise.all(this.groups.map((g) => g.stop(deadline)));
    this.groups.length = 0;
    for (const s of this.subs.splice(0)) s.unsubscribe();
  }
}
