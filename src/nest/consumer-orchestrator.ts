import { Inject, Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { EchoMqConnection } from '../core/connection/index.js';
import { resolveConsumerOptions } from '../queue/processor-options.js';
import { lanePolicyWire } from '../queue/lane-policy.js';
import { declarePolicy, describePolicy } from '../core/wire/index.js';
import { queueKeys } from '../core/keys.js';
import { Consumer } from '../queue/consumer/index.js';
import { failureLog } from '../queue/consumer/index.js';
import { QueueService } from '../queue/queue-service.js';
import { ECHOMQ_OPTIONS } from './echomq-constants.js';
import type { EchoMqModuleOptions } from './echomq-options.js';
import { ProcessorExplorer } from './processor-explorer.js';
import { routeProcessors } from './processor-routes.js';
import { LocalQueueEvents } from './local-queue-events.js';
import { QueueRegistry } from './queue-registry.js';
import { flowHandler } from './flow-decorator.js';
import { batchHandler, type BatchHandler } from '../queue/batch-handler.js';
import { EchoMqTelemetry } from '../telemetry/telemetry.js';
import { countingFailures, countingListener, instrumentHandler } from '../telemetry/consumer-telemetry.js';

/**
 * Starts one supervised consumer loop per `@Processor` queue once the application has
 * bootstrapped (a queue's methods by job name share one loop, `routeProcessors`),
 * stops them gracefully before shutdown, and closes the connection last.
 */
@Injectable()
export class ConsumerOrchestrator implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('EchoMQ');
  private readonly consumers: Consumer[] = [];

  constructor(
    @Inject(ECHOMQ_OPTIONS) private readonly options: EchoMqModuleOptions,
    private readonly conn: EchoMqConnection,
    private readonly queues: QueueService,
    private readonly explorer: ProcessorExplorer,
    private readonly telemetry: EchoMqTelemetry,
    private readonly registry: QueueRegistry,
    private readonly local: LocalQueueEvents,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.declarePolicies();
    if (this.options.consumers === false) return;
    // Failed attempts (warn) and buried jobs (error), logged once per transition.
    const onFailure = failureLog(this.conn, this.logger);
    const relay = this.options.flows?.relay !== false ? this.queues.flows.relay : undefined;
    const { registry, tracing } = this.telemetry;
    for (const p of routeProcessors(this.explorer.processors)) {
      const handler = p.flow
        ? flowHandler(this.queues.flows, p.queue, p.handler)
        : p.options.batch
          ? batchHandler(p.handler as unknown as BatchHandler, p.options.batch)
          : p.handler;
      const counters = registry.queue(p.queue);
      const consumer = new Consumer(this.conn, {
        queue: p.queue,
        // Counted and timed (and traced, with tracing on): docs/telemetry.md.
        handler: instrumentHandler(p.queue, handler, registry, tracing),
        ...resolveConsumerOptions(this.queues.settings(p.queue), p.options),
        logger: { warn: (m) => this.logger.warn(m), error: (m, e) => this.logger.error(m, e) },
        // A completed flow child's hand-off is relayed by this process straight from the reply.
        handoff: relay && { leaseMs: relay.leaseMs, relay: (entries) => relay.relayTaken(p.queue, entries) },
        // Local @OnQueueEvent listeners hear what this loop settles (none: nothing is added).
        onFailure: countingFailures(counters, this.local.failures(p.queue, onFailure)),
        listener: this.local.listener(p.queue, countingListener(counters)),
      });
      await consumer.start();
      this.consumers.push(consumer);
      // Flow hand-offs written by this queue's transitions are relayed by this process too.
      relay?.watch(p.queue);
      this.logger.log(`${p.name} ${p.flow ? 'runs the flow step of' : 'consumes'} "${p.queue}" (concurrency ${p.options.concurrency ?? 1})`);
    }
  }

  /**
   * Writes the stored policy (docs/protocol.md §5, "Policy lives in the data") of each queue the
   * options declare one for (`queues`, `forFeature`) and no `@Processor` of this app consumes:
   * a producer-only app declares it too. A consumer writes its own at start. Replacing a
   * different stored policy is a warning naming both.
   */
  private async declarePolicies(): Promise<void> {
    const consumed = new Set(this.options.consumers === false ? [] : this.explorer.processors.map((p) => p.queue));
    for (const queue of Object.keys(this.registry.overrides)) {
      const { rateLimit, lanes } = this.queues.settings(queue);
      if (consumed.has(queue) || (rateLimit === undefined && lanes === undefined)) continue;
      const mine = { rateLimit, lanePolicy: lanes === undefined ? undefined : lanePolicyWire(lanes) };
      const before = await declarePolicy(this.conn.scriptClient, queueKeys(queue), mine);
      if (before) {
        this.logger.warn(`queue "${queue}": this app's policy (${describePolicy(mine)}) replaced the stored one (${describePolicy(before)}); every claim now enforces it`);
      }
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    const deadline = this.options.shutdownTimeoutMs ?? 10_000;
    await Promise.all(this.consumers.map((c) => c.stop(deadline)));
    this.consumers.length = 0;
    await this.queues.flows.close();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.conn.close();
  }
}
