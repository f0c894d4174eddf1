import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { InvalidOptionError } from '../core/errors.js';
import { assertName } from '../core/keys.js';
import type { EchoMqConnection } from '../core/connection/index.js';
import type { FlowOptions } from '../queue/flows/index.js';
import { QueueService } from '../queue/queue-service.js';
import type { EnqueueItem, QueueDefaults } from '../queue/queue-options.js';
import { ECHOMQ_OPTIONS } from './echomq-constants.js';
import type { EchoMqModuleOptions, QueueRegistration } from './echomq-options.js';
import { ProcessorExplorer } from './processor-explorer.js';
import type { EchoMqTelemetry } from '../telemetry/telemetry.js';
import { withTraceParent } from '../telemetry/job-trace.js';

/** True for a valid queue name (an invalid one is refused by the enqueue itself, not warned about). */
function isName(queue: string): boolean {
  try {
    assertName(queue, 'queue');
    return true;
  } catch {
    return false;
  }
}

/**
 * The queues this app registered (`forFeature`, the `queues` option) and their overrides, and the
 * warn-once check of enqueues to a queue nobody registered or consumes (`warnUnknownQueues`).
 * Checks made before bootstrap (before every `@Processor` is known) are settled at bootstrap.
 */
@Injectable()
export class QueueRegistry implements OnApplicationBootstrap {
  private readonly logger = new Logger('EchoMQ');
  /** Per-queue overrides as `QueueService` reads them: the `queues` option, then registrations. */
  readonly overrides: Record<string, Partial<QueueDefaults>>;
  private readonly registered = new Set<string>();
  private readonly registeredDefaults = new Map<string, string>();
  private readonly warned = new Set<string>();
  private early?: Set<string> = new Set();
  private consumed = new Set<string>();

  constructor(
    @Inject(ECHOMQ_OPTIONS) private readonly options: EchoMqModuleOptions,
    private readonly explorer: ProcessorExplorer,
  ) {
    this.overrides = { ...options.queues };
    for (const name of Object.keys(this.overrides)) this.registered.add(name);
  }

  /**
   * Registers a queue (a `forFeature` entry, already validated). Registering it again is fine;
   * registering it again with other defaults is refused (EMQ_BAD_OPTION).
   */
  register(r: QueueRegistration): void {
    if (r.defaults) {
      const json = JSON.stringify(r.defaults);
      const before = this.registeredDefaults.get(r.name);
      if (before !== undefined && before !== json) {
        throw new InvalidOptionError(`queue "${r.name}" is registered twice with different defaults (${before} and ${json})`);
      }
      this.registeredDefaults.set(r.name, json);
      this.overrides[r.name] = { ...this.options.queues?.[r.name], ...r.defaults };
    }
    this.registered.add(r.name);
  }

  /** The queues a `forFeature` entry or the `queues` option names. */
  names(): string[] {
    return [...this.registered];
  }

  /** True when a `forFeature` entry or the `queues` option names `queue`. */
  isRegistered(queue: string): boolean {
    return this.registered.has(queue);
  }

  /** Called on every enqueue through `QueueService`: warns once for an unknown queue. */
  enqueued(queue: string): void {
    if (this.options.warnUnknownQueues === false || this.warned.has(queue) || this.registered.has(queue)) return;
    if (this.early) this.early.add(queue);
    else this.check(queue);
  }

  /** Learns which queues this app's `@Processor` / `@Flow` methods consume, then settles the early checks. */
  onApplicationBootstrap(): void {
    if (this.options.consumers !== false) this.consumed = new Set(this.explorer.processors.map((p) => p.queue));
    const early = this.early ?? new Set<string>();
    this.early = undefined;
    for (const q of early) this.check(q);
  }

  private check(queue: string): void {
    if (this.warned.has(queue) || this.registered.has(queue) || this.consumed.has(queue) || !isName(queue)) return;
    this.warned.add(queue);
    const consumer = this.options.consumers === false ? '' : ' and no @Processor or @Flow of this app consumes';
    this.logger.warn(
      `enqueued to queue "${queue}", which no EchoMqModule.forFeature entry or queues option registers${consumer}: ` +
        `is the name right? (warned once per queue; warnUnknownQueues: false silences this)`,
    );
  }
}

/** `QueueService` as the module provides it: every enqueue is reported to the registry first. */
export class RegisteredQueueService extends QueueService {
  constructor(
    conn: EchoMqConnection,
    defaults: QueueDefaults,
    private readonly registry: QueueRegistry,
    flowOptions: FlowOptions,
    private readonly telemetry?: EchoMqTelemetry,
  ) {
    super(conn, defaults, registry.overrides, flowOptions);
  }

  /**
   * `QueueService.enqueueMany`, after telling the registry (the warn-once check); the jobs added
   * are counted (`echomq_jobs_enqueued_total`), and with tracing the call runs in an enqueue span
   * whose traceparent each job carries (docs/telemetry.md).
   */
  override enqueueMany<T>(queue: string, items: readonly EnqueueItem<T>[]): Promise<string[]> {
    this.registry.enqueued(queue);
    const t = this.telemetry;
    if (!t) return super.enqueueMany(queue, items);
    const send = async (tp: string | undefined): Promise<string[]> => {
      const ids = await super.enqueueMany(queue, tp ? withTraceParent(items, tp) : items);
      t.registry.queue(queue).enqueued += ids.length;
      return ids;
    };
    return t.tracing ? t.tracing.enqueue(queue, Array.isArray(items) ? items.length : 0, send) : send(undefined);
  }
}
