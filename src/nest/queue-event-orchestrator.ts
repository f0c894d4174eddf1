import { hostname } from 'node:os';
import { Inject, Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap, type OnModuleInit } from '@nestjs/common';
import { EchoMqConnection } from '../core/connection/index.js';
import { queueKeys } from '../core/keys.js';
import { EventLogReader } from '../queue/event-log-reader.js';
import { QueueService } from '../queue/queue-service.js';
import { ECHOMQ_OPTIONS } from './echomq-constants.js';
import type { EchoMqModuleOptions } from './echomq-options.js';
import { LocalQueueEvents } from './local-queue-events.js';
import { QueueEventExplorer } from './queue-event-explorer.js';

/**
 * Runs the `@OnQueueEvent` listeners. At module init (before any consumer of this app starts)
 * it registers the local ones with `LocalQueueEvents` and, for each fleet one, creates its
 * consumer group on the queue's lifecycle log at the log's end when the group does not exist
 * yet: events logged from then on are delivered, none between the app's start and its first
 * read. The fleet readers start after bootstrap and stop before shutdown; a group keeps its
 * position in Valkey, so a restarted app resumes where it stopped. `consumers: false` starts no
 * fleet readers (as for `@OnEvent`).
 */
@Injectable()
export class QueueEventOrchestrator implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('EchoMQ');
  private readonly readers: EventLogReader[] = [];
  private readonly joined: { reader: EventLogReader; line: string }[] = [];

  constructor(
    @Inject(ECHOMQ_OPTIONS) private readonly options: EchoMqModuleOptions,
    private readonly conn: EchoMqConnection,
    private readonly queues: QueueService,
    private readonly explorer: QueueEventExplorer,
    private readonly local: LocalQueueEvents,
  ) {}

  async onModuleInit(): Promise<void> {
    const consumer = this.options.bus?.instance ?? `${hostname()}-${process.pid}`;
    for (const l of this.explorer.explore()) {
      if (l.scope === 'local') {
        this.local.add(l.queue, l.kinds, l.handler, l.name);
        continue;
      }
      if (this.options.consumers === false) continue;
      const reader = new EventLogReader(this.conn, {
        queue: l.queue,
        group: l.group!,
        consumer,
        kinds: l.kinds,
        sink: (e) => l.handler(e) as Promise<void>,
        logger: { warn: (m) => this.logger.warn(m), error: (m, e) => this.logger.error(m, e) },
      });
      await reader.open();
      this.joined.push({ reader, line: `${l.name} reads the lifecycle log of "${l.queue}" (${l.kinds.join(', ')}) in group "${l.group}"` });
      await this.warnWithoutLog(l.queue, l.name);
    }
  }

  onApplicationBootstrap(): void {
    for (const { reader, line } of this.joined.splice(0)) {
      reader.start();
      this.readers.push(reader);
      this.logger.log(line);
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    const deadline = this.options.shutdownTimeoutMs ?? 10_000;
    await Promise.all(this.readers.splice(0).map((r) => r.stop(deadline)));
  }

  /** A fleet listener of a queue whose lifecycle log is off (here and in Valkey) would hear nothing: warned. */
  private async warnWithoutLog(queue: string, name: string): Promise<void> {
    if (this.queues.settings(queue).eventsLog > 0) return;
    const stored = await this.conn.client.hget(queueKeys(queue).meta, 'elog');
    if (Number(stored ?? 0) > 0) return;
    this.logger.warn(`${name} listens fleet-wide to queue "${queue}", whose lifecycle log is off: set its eventsLog (docs/queue.md, "Lifecycle events"), or it hears nothing`);
  }
}
