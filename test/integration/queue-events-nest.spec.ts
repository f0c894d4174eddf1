/**
 * Issue 39, item 5: `@OnQueueEvent(queue, kind, { scope })`. Local listeners hear this app's own
 * consumers (the result, the error and the attempt, in process); fleet listeners read the
 * queue's lifecycle log in a consumer group: another app's jobs, the result read from the row,
 * at least once, resumed after a restart without losing what was logged meanwhile.
 */
import 'reflect-metadata';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Redis } from 'iovalkey';
import { EchoMqModule, OnQueueEvent, Processor, QueueService, type Job, type QueueEventDetail } from '../../src/index.js';
import { CapturedLogs } from '../helpers/nest.js';
import { eventually, queueKeysIn, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

const LOCAL = randomQueue('oqe-local');
const FLEET = randomQueue('oqe-fleet');

const localSeen: QueueEventDetail[] = [];
const fleetSeen: QueueEventDetail[] = [];

@Injectable()
class Worker {
  @Processor(LOCAL, { attempts: 2, backoff: { type: 'fixed', delayMs: 10 } })
  async run(job: Job<{ fail?: boolean; n: number }>): Promise<{ doubled: number }> {
    if (job.payload.fail) throw new Error(`no luck on attempt ${job.attempt}`);
    return { doubled: job.payload.n * 2 };
  }

  @Processor(FLEET, { name: 'charge' })
  async charge(job: Job<{ n: number }>): Promise<string> {
    return `charged ${job.payload.n}`;
  }

  @Processor(FLEET, { name: 'boom', attempts: 1 })
  async boom(): Promise<string> {
    throw new Error('boom failed');
  }
}

@Injectable()
class LocalListener {
  @OnQueueEvent(LOCAL, 'completed')
  done(e: QueueEventDetail): void {
    localSeen.push(e);
  }

  @OnQueueEvent(LOCAL, ['failed', 'buried'])
  failed(e: QueueEventDetail): void {
    localSeen.push(e);
  }
}

@Injectable()
class FleetListener {
  @OnQueueEvent(FLEET, ['completed', 'failed'], { scope: 'fleet' })
  async heard(e: QueueEventDetail): Promise<void> {
    fleetSeen.push(e);
  }
}

const opts = () => ({ connection: { url: testUrl() }, shutdownTimeoutMs: 2000, queues: { [FLEET]: { eventsLog: 1000 } } });

async function start(providers: unknown[]): Promise<INestApplication> {
  const mod = await Test.createTestingModule({ imports: [EchoMqModule.forRoot(opts())], providers: providers as never[] }).compile();
  const app = mod.createNestApplication({ logger: false });
  await app.init();
  return app;
}

let raw: Redis;
let worker: INestApplication;
beforeAll(async () => {
  raw = rawClient();
  worker = await start([Worker, LocalListener]);
});
afterAll(async () => {
  await worker.close();
  for (const q of [LOCAL, FLEET]) {
    const keys = await queueKeysIn(raw, q);
    if (keys.length) await raw.del(...keys);
  }
  await raw.quit();
});

describe('@OnQueueEvent, scope local', () => {
  it('hears completed with the result and attempt, and each failed attempt with its error, attempt and outcome', async () => {
    const q = worker.get(QueueService);
    const ok = await q.enqueue(LOCAL, { n: 21 });
    const bad = await q.enqueue(LOCAL, { n: 1, fail: true });
    await eventually(() => localSeen.filter((e) => e.id === bad).length >= 3 && localSeen.some((e) => e.id === ok), 5000, 'local events');
    expect(localSeen.find((e) => e.id === ok)).toMatchObject({ queue: LOCAL, kind: 'completed', scope: 'local', result: { doubled: 42 }, attempt: 1 });
    const failed = localSeen.filter((e) => e.id === bad && e.kind === 'failed');
    expect(failed.map((e) => [e.attempt, e.outcome])).toEqual([
      [1, 'retry'],
      [2, 'dead'],
    ]);
    expect(failed[0].error).toContain('no luck on attempt 1');
    expect(failed[1].error).toContain('no luck on attempt 2');
    expect(localSeen.filter((e) => e.id === bad && e.kind === 'buried')).toHaveLength(1);
    expect(localSeen.some((e) => e.id === bad && e.kind === 'completed')).toBe(false);
  });
});

describe('@OnQueueEvent, scope fleet', () => {
  it("another app's listener hears completed with the result and name, and failed with the error; after a restart it resumes with what was logged while it was down", async () => {
    let listener = await start([FleetListener]);
    try {
      // The producer is the listening app; the named processor runs in the worker app.
      const producer = listener.get(QueueService);
      const first = await producer.enqueue(FLEET, { n: 1 }, { name: 'charge' });
      const broken = await producer.enqueue(FLEET, { n: 2 }, { name: 'boom' });
      await eventually(() => fleetSeen.some((e) => e.id === first) && fleetSeen.some((e) => e.id === broken), 8000, 'fleet events');
      expect(fleetSeen.find((e) => e.id === first)).toMatchObject({ queue: FLEET, kind: 'completed', scope: 'fleet', name: 'charge', result: 'charged 1', attempt: 1 });
      expect(fleetSeen.find((e) => e.id === first)?.logId).toMatch(/^\d+-\d+$/);
      expect(fleetSeen.find((e) => e.id === broken)).toMatchObject({ kind: 'failed', name: 'boom', outcome: 'dead', attempt: 1, error: expect.stringContaining('boom failed') });

      await listener.close(); // the listener is down: what is logged now waits in its group
      const meanwhile = await worker.get(QueueService).enqueueMany(FLEET, [1, 2, 3].map((n) => ({ payload: { n: 10 + n }, opts: { name: 'charge' } })));
      await eventually(async () => (await Promise.all(meanwhile.map((id) => worker.get(QueueService).getJob(FLEET, id)))).every((v) => v?.status === 'done'), 5000, 'done while down');
      expect(fleetSeen.some((e) => meanwhile.includes(e.id))).toBe(false);

      listener = await start([FleetListener]);
      await eventually(() => meanwhile.every((id) => fleetSeen.some((e) => e.id === id)), 8000, 'resumed');
      for (const [i, id] of meanwhile.entries()) {
        expect(fleetSeen.find((e) => e.id === id)).toMatchObject({ kind: 'completed', result: `charged ${11 + i}` });
      }
      // The group's position moved past them: nothing is pending for it.
      const groups = (await raw.call('XINFO', 'GROUPS', `emq:{${FLEET}}:events`)) as unknown[][];
      const mine = groups.map((g) => Object.fromEntries(Array.from({ length: g.length / 2 }, (_, i) => [g[2 * i], g[2 * i + 1]]))).find((g) => g.name === 'FleetListener.heard');
      await eventually(async () => {
        const now = (await raw.call('XPENDING', `emq:{${FLEET}}:events`, 'FleetListener.heard')) as unknown[];
        return now[0] === 0;
      }, 3000, 'all acknowledged');
      expect(mine).toBeDefined();
    } finally {
      await listener.close();
    }
  });
});

describe('@OnQueueEvent validation', () => {
  it('refuses a kind a local listener cannot hear, an unknown kind, a group without fleet, unknown option keys', () => {
    expect(() => OnQueueEvent('q', 'enqueued')).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining("needs scope: 'fleet'") }));
    expect(() => OnQueueEvent('q', 'finished' as never, { scope: 'fleet' })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('unknown event kind') }));
    expect(() => OnQueueEvent('q', 'completed', { group: 'g' })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(() => OnQueueEvent('q', 'completed', { scope: 'fleet', group: 'a b' })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    expect(() => OnQueueEvent('q', 'completed', { scop: 'fleet' } as never)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('scop') }));
    expect(() => OnQueueEvent('q', [])).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(() => OnQueueEvent('q', ['enqueued', 'claimed'], { scope: 'fleet' })).not.toThrow();
  });
});

const NOLOG = randomQueue('oqe-nolog');

@Injectable()
class SameGroup {
  @OnQueueEvent(NOLOG, 'completed', { scope: 'fleet', group: 'audit' })
  one(): void {}

  @OnQueueEvent(NOLOG, 'failed', { scope: 'fleet', group: 'audit' })
  two(): void {}
}

@Injectable()
class Unlogged {
  @OnQueueEvent(NOLOG, 'completed', { scope: 'fleet' })
  heard(): void {}
}

describe('@OnQueueEvent at bootstrap', () => {
  it('two fleet listeners of one queue in one group are refused, naming both', async () => {
    const mod = await Test.createTestingModule({ imports: [EchoMqModule.forRoot({ connection: { url: testUrl() } })], providers: [SameGroup] }).compile();
    const app = mod.createNestApplication({ logger: false });
    await expect(app.init()).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining('SameGroup.two and SameGroup.one both read the events') });
    await app.close().catch(() => undefined);
  });

  it('a fleet listener of a queue whose lifecycle log is off is warned about, naming the option', async () => {
    const logs = new CapturedLogs();
    const builder = Test.createTestingModule({ imports: [EchoMqModule.forRoot({ connection: { url: testUrl() } })], providers: [Unlogged] });
    builder.setLogger(logs);
    const app = (await builder.compile()).createNestApplication({ logger: logs });
    await app.init();
    try {
      expect(logs.find('warn', `Unlogged.heard listens fleet-wide to queue "${NOLOG}", whose lifecycle log is off: set its eventsLog`)).toHaveLength(1);
    } finally {
      await app.close();
      const keys = await queueKeysIn(raw, NOLOG);
      if (keys.length) await raw.del(...keys);
    }
  });
});
