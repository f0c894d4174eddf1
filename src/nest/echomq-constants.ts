/** DI token of the resolved module options. */
export const ECHOMQ_OPTIONS = Symbol('ECHOMQ_OPTIONS');
/** Metadata key written by `@Processor`. */
export const PROCESSOR_METADATA = 'echomq:processor';
