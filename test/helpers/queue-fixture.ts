import type { Redis } from 'iovalkey';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import type { Consumer } from '../../src/queue/consumer/consumer.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { killChildren } from './child.js';
import { openConnection, rawClient } from './valkey.js';

/** What a queue test file shares: a connection, a raw client, a QueueService and its consumers. */
export interface QueueFixture {
  conn: EchoMqConnection;
  raw: Redis;
  queues: QueueService;
  /** Consumers to stop after each test. */
  readonly consumers: Consumer[];
}

/** Registers the hooks that open the fixture before the file, and clean up after each test and the file. */
export function queueFixture(): QueueFixture {
  const f = { consumers: [] as Consumer[] } as QueueFixture;
  beforeAll(async () => {
    f.conn = await openConnection();
    f.raw = rawClient();
    f.queues = new QueueService(f.conn);
  });
  afterEach(async () => {
    await killChildren();
    await Promise.all(f.consumers.splice(0).map((c) => c.stop(1000)));
  });
  afterAll(async () => {
    await f.conn.close();
    await f.raw.quit();
  });
  return f;
}
