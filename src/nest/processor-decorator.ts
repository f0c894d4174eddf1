import { checkProcessorOptions, type ProcessorOptions } from '../queue/processor-options.js';
import { assertName } from '../core/keys.js';
import { PROCESSOR_METADATA } from './echomq-constants.js';
import { checkProcessorSchedules } from '../queue/schedules/index.js';

/** What `@Processor` records on a method. */
export interface ProcessorMetadata {
  readonly queue: string;
  readonly options: ProcessorOptions;
  /** Set by `@Flow`: the handler is a flow's parent step and receives its children's results. */
  readonly flow?: boolean;
}

/**
 * Marks a provider method `(job) => Promise<result>` as the handler of `queue`. Validates the
 * name and options at once (unknown option keys and out-of-range values throw
 * `InvalidOptionError`, EMQ_BAD_OPTION, when the class is defined); only writes metadata. The
 * explorer finds it at module init and the loop starts after bootstrap.
 */
export function Processor(queue: string, options: ProcessorOptions = {}): MethodDecorator {
  assertName(queue, 'queue');
  checkProcessorOptions(options, `@Processor("${queue}") options`);
  checkProcessorSchedules(options.schedules, `@Processor("${queue}")`);
  return (_target, _key, descriptor) => {
    Reflect.defineMetadata(PROCESSOR_METADATA, { queue, options } satisfies ProcessorMetadata, descriptor.value as object);
    return descriptor;
  };
}

/** Reads `@Processor` metadata from a method, if any. */
export function getProcessorMetadata(method: unknown): ProcessorMetadata | undefined {
  if (typeof method !== 'function') return undefined;
  return Reflect.getMetadata(PROCESSOR_METADATA, method) as ProcessorMetadata | undefined;
}
