import { checkProcessorOptions, type ProcessorOptions } from '../queue/processor-options.js';
import { assertName } from '../core/keys.js';
import type { FlowService } from '../queue/flows/index.js';
import type { FlowJob, FlowSpec } from '../queue/flows/index.js';
import type { Job, JobHandler } from '../queue/job.js';
import { InvalidOptionError } from '../core/errors.js';
import { PROCESSOR_METADATA } from './echomq-constants.js';
import type { ProcessorMetadata } from './processor-decorator.js';

/** Options of `@Flow`: those of a consumer loop (`@Processor`). */
export type FlowStepOptions = ProcessorOptions;

/**
 * Marks a provider method `(job: FlowJob) => Promise<result>` as the parent step of the flows
 * whose parents live in `queue`: it runs once all of a parent's children finished, its job's
 * `children` holds their results (by id and by key), and its return value flows up to its own
 * parent, if it has one. It is a consumer loop like `@Processor` (same options); a job of the
 * queue that is not a flow parent gets empty `children`. Unknown option keys are refused
 * (`InvalidOptionError`) when the class is defined.
 */
export function Flow(queue: string, options: FlowStepOptions = {}): MethodDecorator {
  assertName(queue, 'queue');
  checkProcessorOptions(options, `@Flow("${queue}") options`);
  if (options.batch !== undefined) throw new InvalidOptionError(`@Flow("${queue}") options: a flow step runs one parent at a time (no batch)`);
  return (_target, _key, descriptor) => {
    Reflect.defineMetadata(PROCESSOR_METADATA, { queue, options, flow: true } satisfies ProcessorMetadata, descriptor.value as object);
    return descriptor;
  };
}

/**
 * Wraps a `@Flow` method as a plain job handler: the parent's children results are read (one
 * round trip) and handed over on the job as `children`.
 */
export function flowHandler(flows: FlowService, queue: string, step: JobHandler<unknown, unknown>): JobHandler<unknown, unknown> {
  return async (job: Job<unknown>) => {
    const children = await flows.children(queue, job.id);
    // The job's own getters (payload, signal) stay lazy: `children` is added on a derived object.
    const flowJob = Object.create(job, {
      children: { value: children, enumerable: true },
      waitFor: { value: (kids: readonly FlowSpec[]) => flows.waitFor(queue, job, kids) },
    }) as FlowJob<unknown>;
    return step(flowJob);
  };
}
