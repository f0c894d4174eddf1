import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { ALL, aclUser, type TestUser } from '../helpers/acl.js';
import { slowClock } from '../helpers/clock.js';
import { startConsumer } from '../helpers/consumers.js';
import { eventually, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';
import type { Redis } from 'iovalkey';
import type { Consumer } from '../../src/queue/consumer/consumer.js';

// Deterministic: Date.now() runs at half speed while the test runs, so the back-off timer always
// fires before the deadline computed from Date.now() (see test/helpers/clock.ts).
describe('the consumer loop after a failed round, when its back-off timer fires early', () => {
  let raw: Redis;
  let admin: EchoMqConnection;
  let queues: QueueService;
  let user: TestUser;
  let conn: EchoMqConnection;
  let consumer: Consumer | undefined;
  let restore: (() => void) | undefined;

  beforeAll(async () => {
    raw = rawClient();
    admin = new EchoMqConnection({ url: testUrl() });
    await admin.open();
    queues = new QueueService(admin);
    user = await aclUser(raw, ALL);
    conn = new EchoMqConnection({ url: testUrl(), username: user.username, password: user.password });
    await conn.open();
  });
  afterEach(async () => {
    restore?.();
    restore = undefined;
    await user.set(...ALL);
    await consumer?.stop(1000);
    consumer = undefined;
  });
  afterAll(async () => {
    await conn.close();
    await admin.close();
    await user.drop();
    await raw.quit();
  });

  it('resumes once the refusal is lifted, and runs the job enqueued during the outage', async () => {
    const q = randomQueue('early-timer');
    const ran: string[] = [];
    const started = await startConsumer(conn, q, (job) => void ran.push(job.id), { maxIdleMs: 200 });
    consumer = started.consumer;
    restore = slowClock();

    // A real refusal: the consumer's user may no longer run scripts, so its next round fails (NOPERM).
    await user.set(...ALL, '-@scripting');
    const id = await queues.enqueue(q, { n: 1 });
    await eventually(() => started.log.warnings.some((w) => /retrying in \d+ ms/.test(w)), 10_000, 'a failed round');
    await user.set(...ALL);

    // The back-off timer fires before Date.now() reaches its deadline; the loop must resume anyway.
    await eventually(async () => (await queues.getJob(q, id))?.status === 'done', 10_000, 'the job to complete');
    expect(ran).toEqual([id]);
    const later = await queues.enqueue(q, { n: 2 });
    await eventually(async () => (await queues.getJob(q, later))?.status === 'done', 10_000, 'a later job to complete');
  });
});
