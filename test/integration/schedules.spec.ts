import 'reflect-metadata';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { EchoMqModule, Processor, QueueService, type Job } from '../../src/index.js';
import { parseId } from '../../src/core/ids.js';
import { queueKeys } from '../../src/core/keys.js';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { eventually, openConnection, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

const Q = randomQueue('sched');
const EVERY = 200;
const handled: string[] = [];

@Injectable()
class Beat {
  @Processor(Q, { concurrency: 4, schedules: [{ name: 'beat', every: EVERY, payload: { k: 'beat' } }] })
  run(job: Job<{ k: string }>): void {
    expect(job.payload).toEqual({ k: 'beat' });
    handled.push(job.id);
  }
}

async function boot(): Promise<INestApplication> {
  const mod = await Test.createTestingModule({
    imports: [EchoMqModule.forRoot({ connection: { url: testUrl() }, shutdownTimeoutMs: 2000 })],
    providers: [Beat],
  }).compile();
  const app = mod.createNestApplication({ logger: false });
  await app.init();
  return app;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('schedules: three app instances share one schedule', () => {
  let conn: EchoMqConnection;
  const raw = rawClient();
  beforeAll(async () => {
    conn = await openConnection();
  });
  afterAll(async () => {
    await conn.close();
    await raw.quit();
  });

  it('exactly one job per tick over ~60 ticks, with one instance restarted mid-way (none lost, none doubled)', async () => {
    const queues = new QueueService(conn); // its own loop is never started: it only declares and reads
    // The same declaration the @Processor makes, so the first tick is known before any instance runs.
    expect(await queues.schedule(Q, 'beat', { every: EVERY }, { k: 'beat' })).toBe('created');
    const [info] = await queues.schedules(Q);
    const first = info.next!.getTime();
    expect(info).toMatchObject({ name: 'beat', every: EVERY, payload: { k: 'beat' }, missed: 'skip' });

    const apps = [await boot(), await boot(), await boot()];
    try {
      // Every instance declared the same schedule: unchanged, the tick kept.
      expect((await queues.schedules(Q)).length).toBe(1);
      await sleep(6000);
      const before = handled.length;
      expect(before).toBeGreaterThan(10);
      await apps[1].close(); // restart one instance mid-way
      apps[1] = await boot();
      await sleep(6000);
      expect(handled.length).toBeGreaterThan(before + 10);
    } finally {
      await Promise.all(apps.map((a) => a.close()));
    }
    // No loop runs now: the schedule's next tick says how many ticks were taken since the first.
    const last = Number(await raw.zscore(queueKeys(Q).ticks, 'beat'));
    const ticks = (last - first) / EVERY;
    expect(Number.isInteger(ticks)).toBe(true);
    expect(ticks).toBeGreaterThanOrEqual(55);
    const counts = await queues.counts(Q);
    // Every tick wrote exactly one job: handled, or still waiting (a tick written ahead).
    expect(handled.length + counts.pending + counts.scheduled + counts.active).toBe(ticks);
    expect(new Set(handled).size).toBe(handled.length);
    expect(counts.dead).toBe(0);
    // More than one instance won ticks (each mints on its own node number).
    expect(new Set(handled.map((id) => parseId(id).node)).size).toBeGreaterThanOrEqual(2);
    await eventually(async () => (await queues.unschedule(Q, 'beat')) === true, 1000, 'unschedule');
    expect(await queues.schedules(Q)).toEqual([]);
  }, 40_000);
});
