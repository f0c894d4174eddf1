import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { Consumer, type ConsumerConfig } from '../../src/queue/consumer/consumer.js';
import type { Job } from '../../src/queue/job.js';

/** Warnings and errors a consumer reported, for asserting that none happened. */
export interface CapturedLog {
  readonly warnings: string[];
  readonly errors: string[];
}

/** A Consumer config with test-friendly defaults (fixed 50 ms backoff, 1 s idle blocks). */
export function consumerConfig(
  queue: string,
  handler: (job: Job<unknown>) => Promise<unknown> | unknown,
  over: Partial<ConsumerConfig> = {},
): { config: ConsumerConfig; log: CapturedLog } {
  const log: CapturedLog = { warnings: [], errors: [] };
  const config: ConsumerConfig = {
    queue,
    handler,
    concurrency: 1,
    leaseMs: 30_000,
    attempts: 3,
    backoff: 'f:50',
    keepDone: 1000,
    deadCap: 1000,
    maxResultBytes: 512 * 1024,
    maxIdleMs: 1000,
    logger: { warn: (m) => log.warnings.push(m), error: (m) => log.errors.push(m) },
    ...over,
  };
  return { config, log };
}

/** Starts a Consumer on `conn`; the caller stops it. */
export async function startConsumer(
  conn: EchoMqConnection,
  queue: string,
  handler: (job: Job<unknown>) => Promise<unknown> | unknown,
  over: Partial<ConsumerConfig> = {},
): Promise<{ consumer: Consumer; log: CapturedLog }> {
  const { config, log } = consumerConfig(queue, handler, over);
  const consumer = new Consumer(conn, config);
  await consumer.start();
  return { consumer, log };
}
