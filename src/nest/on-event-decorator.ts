import { assertName } from '../core/keys.js';
import { resolveGroupOptions, type OnEventOptions } from '../bus/consumer-group/index.js';

/** Metadata key written by `@OnEvent`. */
export const ON_EVENT_METADATA = 'echomq:on-event';

/** What `@OnEvent` records on a method. */
export interface OnEventMetadata {
  readonly topic: string;
  readonly options: OnEventOptions;
}

/**
 * Marks a provider method `(event: BusEvent) => Promise<void>` as the handler of consumer group
 * `options.group` on `topic`. Validates the names and options at once (typed errors: unknown
 * option keys and out-of-range values are refused); only writes metadata. The explorer finds it
 * at module init and the group loop starts after bootstrap.
 */
export function OnEvent(topic: string, options: OnEventOptions): MethodDecorator {
  assertName(topic, 'topic');
  resolveGroupOptions(options);
  const meta: OnEventMetadata = { topic, options: { ...options } };
  return (_target, _key, descriptor) => {
    Reflect.defineMetadata(ON_EVENT_METADATA, meta, descriptor.value as object);
    return descriptor;
  };
}

/** Reads `@OnEvent` metadata from a method, if any. */
export function getOnEventMetadata(method: unknown): OnEventMetadata | undefined {
  if (typeof method !== 'function') return undefined;
  return Reflect.getMetadata(ON_EVENT_METADATA, method) as OnEventMetadata | undefined;
}
