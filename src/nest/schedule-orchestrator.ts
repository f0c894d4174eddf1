import { Inject, Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { QueueService } from '../queue/queue-service.js';
import { splitProcessorSchedule } from '../queue/schedules/index.js';
import { ECHOMQ_OPTIONS } from './echomq-constants.js';
import type { EchoMqModuleOptions } from './echomq-options.js';
import { ProcessorExplorer } from './processor-explorer.js';
import { QueueRegistry } from './queue-registry.js';

/**
 * Once the application has bootstrapped: writes the lifecycle-log length (`eventsLog`) of every
 * queue this app knows (its `@Processor` queues, `forFeature` entries and `queues` option) whose
 * length is above 0, so that a queue fed only by schedules or flows logs its events too; upserts
 * the `schedules` of every `@Processor` (the same declaration on every instance is a no-op that
 * keeps the next tick), then runs this process's schedule loop over every `@Processor` queue and
 * every queue given to `QueueService.schedule`; stops the loop before shutdown. `scheduler:
 * false` upserts but runs no loop.
 */
@Injectable()
export class ScheduleOrchestrator implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('EchoMQ');

  constructor(
    @Inject(ECHOMQ_OPTIONS) private readonly options: EchoMqModuleOptions,
    private readonly queues: QueueService,
    private readonly explorer: ProcessorExplorer,
    private readonly registry: QueueRegistry,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const loop = this.options.scheduler !== false;
    const known = new Set([...this.explorer.processors.map((p) => p.queue), ...this.registry.names()]);
    for (const q of known) {
      if (await this.queues.applyEventsLog(q)) this.logger.log(`lifecycle log of "${q}": ${this.queues.settings(q).eventsLog} entries`);
    }
    for (const p of this.explorer.processors) {
      for (const d of p.options.schedules ?? []) {
        const { spec, opts } = splitProcessorSchedule(d, `@Processor("${p.queue}") schedule "${d.name}" keys`);
        const r = await this.queues.schedule(p.queue, d.name, spec, d.payload ?? null, opts);
        if (r !== 'unchanged') this.logger.log(`schedule "${d.name}" of "${p.queue}" ${r}`);
      }
      if (loop) this.queues.scheduler.watch(p.queue);
    }
    if (loop) this.queues.scheduler.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.queues.scheduler.stop();
  }
}
