import { assertName } from '../core/keys.js';
import { InvalidOptionError } from '../core/errors.js';
import { keySet, refuseUnknownKeys } from '../core/known-keys.js';
import type { QueueEventName } from '../queue/event-log-reader.js';

/** Metadata key written by `@OnQueueEvent`. */
export const ON_QUEUE_EVENT_METADATA = 'echomq:on-queue-event';

/** Options of `@OnQueueEvent`. */
export interface OnQueueEventOptions {
  /**
   * `local` (default): this process's own consumers tell it, in process (no Valkey round trip),
   * with the result, error and attempt at hand; at most once, gone with the process. `fleet`: the
   * queue's lifecycle log (needs its `eventsLog`), read in a consumer group: every job of every
   * process, at least once, resumed after a restart (docs/nest.md, "Queue events").
   */
  readonly scope?: 'local' | 'fleet';
  /**
   * `fleet` only: the log's consumer group (the key grammar's names, 1..100 of A-Z a-z 0-9 _ . -).
   * Default: `<Class>.<method>`, so each handler sees every event once however many replicas
   * run it (the replicas split the events between them).
   */
  readonly group?: string;
}

/** What `@OnQueueEvent` records on a method. */
export interface OnQueueEventMetadata {
  readonly queue: string;
  readonly kinds: readonly QueueEventName[];
  readonly scope: 'local' | 'fleet';
  readonly group?: string;
}

const KINDS: ReadonlySet<string> = new Set<QueueEventName>([
  'enqueued', 'scheduled', 'claimed', 'completed', 'retried', 'buried', 'requeued', 'released', 'cancelled', 'cancel-requested', 'waiting', 'failed',
]);
/** What a `local` listener can hear: what this process's consumers settle. */
export const LOCAL_KINDS: ReadonlySet<string> = new Set<QueueEventName>(['completed', 'failed', 'retried', 'buried']);
const OPTION_KEYS = keySet<OnQueueEventOptions>({ scope: true, group: true });

/**
 * Marks a provider method `(event: QueueEventDetail) => unknown` as a listener of `queue`'s
 * lifecycle events of `kind` (one or many; `failed` = an attempt failed, whether `retried` or
 * `buried`): called once per job, with the result (`completed`) or the error and attempt
 * (`failed`). Validates at once (`InvalidOptionError`, EMQ_BAD_OPTION; a bad queue or group
 * name EMQ_BAD_NAME); only writes metadata. The explorer finds it at module init; fleet readers
 * join their groups then and start after bootstrap. BullMQ's `@OnQueueEvent` / `QueueEvents`
 * (fleet) and `@OnWorkerEvent` (local).
 */
export function OnQueueEvent(queue: string, kind: QueueEventName | readonly QueueEventName[], options: OnQueueEventOptions = {}): MethodDecorator {
  assertName(queue, 'queue');
  const what = `@OnQueueEvent("${queue}")`;
  refuseUnknownKeys(options, OPTION_KEYS, `${what} options`);
  const kinds = [...new Set(Array.isArray(kind) ? (kind as readonly QueueEventName[]) : [kind as QueueEventName])];
  if (kinds.length === 0) throw new InvalidOptionError(`${what} needs at least one event kind`);
  const scope = options.scope ?? 'local';
  if (scope !== 'local' && scope !== 'fleet') throw new InvalidOptionError(`${what}: scope must be 'local' or 'fleet', got ${JSON.stringify(String(scope))}`);
  for (const k of kinds) {
    if (!KINDS.has(k)) throw new InvalidOptionError(`${what}: unknown event kind ${JSON.stringify(String(k))} (known: ${[...KINDS].join(', ')})`);
    if (scope === 'local' && !LOCAL_KINDS.has(k)) {
      throw new InvalidOptionError(`${what}: a local listener hears ${[...LOCAL_KINDS].join(', ')} (what this process's consumers settle); "${k}" needs scope: 'fleet'`);
    }
  }
  if (options.group !== undefined) {
    if (scope !== 'fleet') throw new InvalidOptionError(`${what}: group goes with scope: 'fleet'`);
    assertName(options.group, 'group');
  }
  const meta: OnQueueEventMetadata = { queue, kinds, scope, group: options.group };
  return (_target, _key, descriptor) => {
    Reflect.defineMetadata(ON_QUEUE_EVENT_METADATA, meta, descriptor.value as object);
    return descriptor;
  };
}

/** Reads `@OnQueueEvent` metadata from a method, if any. */
export function getOnQueueEventMetadata(method: unknown): OnQueueEventMetadata | undefined {
  if (typeof method !== 'function') return undefined;
  return Reflect.getMetadata(ON_QUEUE_EVENT_METADATA, method) as OnQueueEventMetadata | undefined;
}
