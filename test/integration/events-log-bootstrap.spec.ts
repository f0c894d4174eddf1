/**
 * The lifecycle log configured at bootstrap (docs/queue.md "Lifecycle events"): a queue whose
 * `eventsLog` is set gets meta `elog` when the module starts, so a queue that only a schedule
 * feeds (no process ever enqueues to it) logs its transitions from its first tick.
 */
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { EchoMqModule, Processor, type Job } from '../../src/index.js';
import { queueKeys, wire } from '../../src/protocol.js';
import { refusedUnchanged } from '../helpers/refusals.js';
import { eventually, openConnection, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

const Q = randomQueue('elogs');
const QUIET = randomQueue('elogq');
const handled: string[] = [];

@Injectable()
class Ticked {
  @Processor(Q, { schedules: [{ name: 'beat', every: 100, payload: { k: 1 } }] })
  run(job: Job<{ k: number }>): void {
    handled.push(job.id);
  }
}

describe('eventsLog at bootstrap', () => {
  const raw = rawClient();
  afterAll(async () => {
    await raw.quit();
  });

  it('a schedule-fed queue logs its events from its first tick; a queue without a log is left alone', async () => {
    await raw.hset(queueKeys(QUIET).meta, 'elog', '7'); // set by another process: kept (this app declares 0)
    const mod = await Test.createTestingModule({
      imports: [
        EchoMqModule.forRoot({ connection: { url: testUrl() }, shutdownTimeoutMs: 2000, queues: { [Q]: { eventsLog: 500 }, [QUIET]: {} } }),
      ],
      providers: [Ticked],
    }).compile();
    const app = mod.createNestApplication({ logger: false });
    await app.init();
    try {
      const k = queueKeys(Q);
      expect(await raw.hget(k.meta, 'elog')).toBe('500');
      expect(await raw.hget(queueKeys(QUIET).meta, 'elog')).toBe('7');
      await eventually(() => handled.length >= 2, 5000, 'two ticked jobs to run');
      await eventually(async () => {
        const kinds = (await raw.xrange(k.events, '-', '+')).map(([, f]) => f[1]);
        return ['claimed', 'completed'].every((e) => kinds.includes(e)) && kinds.some((e) => e === 'scheduled' || e === 'enqueued');
      }, 5000, 'the tick, claim and completion logged');
      const logged = (await raw.xrange(k.events, '-', '+')).flatMap(([, f]) => f[3].split(' '));
      expect(logged).toEqual(expect.arrayContaining(handled.slice(0, 2)));
    } finally {
      await app.close();
    }
  });

  it('elog.lua refuses a bad length and an events key of another type, writing nothing', async () => {
    const conn = await openConnection();
    try {
      const q = randomQueue('elogb');
      const k = queueKeys(q);
      expect(await wire.eventsLog(conn.scriptClient, k, 10)).toBe(true);
      expect(await wire.eventsLog(conn.scriptClient, k, 10)).toBe(false);
      await refusedUnchanged(raw, q, 'EMQ_BAD_ARG', () => wire.eventsLog(conn.scriptClient, k, 1_000_001));
      await raw.set(k.events, 'x');
      await refusedUnchanged(raw, q, 'EMQ_WRONGTYPE', () => wire.eventsLog(conn.scriptClient, k, 20));
    } finally {
      await conn.close();
    }
  });
});
