/**
 * Issue 7 #17: a supervised consumer loop stays live through outages of every kind. One Valkey of
 * this file's own (restarted on the same port), one consumer on it, and 36 faults in a row:
 * kill -9 and restart, CLIENT KILL of every connection, a stall longer than the command timeout
 * (DEBUG SLEEP), a NOPERM window, an OOM window. After each, jobs enqueued afterwards complete.
 * Whether a back-off timer fires "early" (before Date.now() reaches its deadline) depends on the
 * machine's clocks; here Date.now() runs at half speed, so every back-off meets that edge.
 */
import { Redis } from 'iovalkey';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { QueueService } from '../../src/queue/queue-service.js';
import type { Consumer } from '../../src/queue/consumer/consumer.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { slowClock } from '../helpers/clock.js';
import { startConsumer, type CapturedLog } from '../helpers/consumers.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const USER = 'emq-worker';
const PASS = 'worker-secret';
const GRANT = ['~*', '&*', '+@all'];
// The worker's user is part of the server's configuration, so it survives a restart.
const ARGS = ['--enable-debug-command', 'yes', '--user', USER, 'on', `>${PASS}`, ...GRANT];

describe('a consumer loop through 36 outages in a row', () => {
  let valkey: EmbeddedValkey;
  let raw: Redis;
  let producer: EchoMqConnection;
  let worker: EchoMqConnection;
  let queues: QueueService;
  let consumer: Consumer;
  let log: CapturedLog;
  const q = randomQueue('outages');
  const ran = new Set<string>();

  beforeAll(async () => {
    valkey = await startEmbeddedValkey({ args: ARGS });
    raw = new Redis({ port: valkey.port, maxRetriesPerRequest: 50 });
    producer = new EchoMqConnection({ port: valkey.port });
    await producer.open();
    queues = new QueueService(producer);
    worker = new EchoMqConnection({ port: valkey.port, username: USER, password: PASS, commandTimeoutMs: 1000 });
    await worker.open();
    ({ consumer, log } = await startConsumer(worker, q, (job) => void ran.add(job.id), { leaseMs: 5000, maxIdleMs: 500 }));
  });
  afterAll(async () => {
    await consumer.stop(1000);
    await worker.close();
    await producer.close();
    raw.disconnect();
    await valkey.stop();
  });

  /** One fault each; each resolves once the fault is over (the server is back, the refusal lifted). */
  const faults: Record<string, () => Promise<void>> = {
    'kill -9 and restart': async () => {
      await valkey.stop();
      await sleep(200);
      valkey = await startEmbeddedValkey({ port: valkey.port, args: ARGS });
    },
    'CLIENT KILL of every connection': async () => {
      await raw.call('CLIENT', ['KILL', 'TYPE', 'normal', 'SKIPME', 'yes']);
    },
    'a stall past the command timeout': async () => {
      await raw.call('DEBUG', ['SLEEP', '1.5']);
    },
    'a NOPERM window': async () => {
      await raw.call('ACL', ['SETUSER', USER, '-@scripting']);
      await sleep(700);
      await raw.call('ACL', ['SETUSER', USER, '+@all']);
    },
    'an OOM window': async () => {
      await raw.call('CONFIG', ['SET', 'maxmemory', '1']);
      await sleep(700);
      await raw.call('CONFIG', ['SET', 'maxmemory', '0']);
    },
  };
  const kinds = Object.keys(faults);

  /** Enqueues one job, retrying while the producer is itself reconnecting; resolves to its id. */
  async function enqueue(n: number): Promise<string> {
    const until = Date.now() + 20_000;
    for (;;) {
      try {
        return await queues.enqueue(q, { n });
      } catch (err) {
        if (Date.now() > until) throw err;
        await sleep(100);
      }
    }
  }

  it('runs the jobs enqueued after every fault', async () => {
    const cycles = 36;
    const restore = slowClock();
    try {
      await runCycles(cycles);
    } finally {
      restore();
    }
    // Live by construction: the invariant check never had to restart the loop.
    expect(log.warnings.filter((w) => w.includes('nothing armed'))).toEqual([]);
    expect(log.warnings.some((w) => w.includes('retrying in'))).toBe(true);
  }, 600_000);

  async function runCycles(cycles: number): Promise<void> {
    for (let i = 0; i < cycles; i++) {
      const kind = kinds[i % kinds.length];
      // A job in flight while the fault hits (lost with the data on a restart, else it runs).
      void queues.enqueue(q, { during: i }).catch(() => undefined);
      await faults[kind]();
      const ids = [await enqueue(i * 10), await enqueue(i * 10 + 1), await enqueue(i * 10 + 2)];
      await eventually(() => ids.every((id) => ran.has(id)), 20_000, `the jobs enqueued after fault ${i + 1} (${kind})`);
    }
  }
});
