/**
 * The job consumer loop (docs/queue.md): `Consumer` claims, runs and settles jobs — its job runner
 * and running-job rows, the parked wait and wake-ups when idle, the round sizer, upkeep (reaping,
 * lease extension), backoff and the failure log. The rest of src/ imports this folder through this
 * file only.
 */
export { Consumer } from './consumer.js';
export type { ConsumerConfig } from './consumer.js';
export { failureLog } from './failure-log.js';
export { errorText } from './error-text.js';
export type { FailureListener, JobFailure } from './failure-log.js';
