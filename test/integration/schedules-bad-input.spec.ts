import 'reflect-metadata';
import { Processor } from '../../src/nest/processor-decorator.js';
import { EchoMqError, InvalidScheduleError } from '../../src/core/errors.js';
import type { ScheduleOptions, ScheduleSpec } from '../../src/queue/schedules/schedule-types.js';
import { queueKeys } from '../../src/core/keys.js';
import { Scheduler } from '../../src/queue/schedules/scheduler.js';
import type { TickRecord } from '../../src/queue/schedules/schedule-types.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { queueKeysIn, randomQueue } from '../helpers/valkey.js';

const f = queueFixture();

/** The code a promise rejects with (undefined when it resolves). */
async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(EchoMqError);
    return (err as EchoMqError).code;
  }
}

describe('schedules: bad input is a typed error and writes nothing', () => {
  it.each<[string, string, unknown, unknown, unknown]>([
    ['a malformed cron', 'EMQ_BAD_SCHEDULE', { cron: 'every monday' }, {}, {}],
    ['a cron field out of range', 'EMQ_BAD_SCHEDULE', { cron: '0 25 * * *' }, {}, {}],
    ['a cron that never fires', 'EMQ_BAD_SCHEDULE', { cron: '0 0 31 2 *' }, {}, {}],
    ['an unknown time zone', 'EMQ_BAD_SCHEDULE', { cron: '0 * * * *', tz: 'Europe/Atlantis' }, {}, {}],
    ['an interval of 0', 'EMQ_BAD_SCHEDULE', { every: 0 }, {}, {}],
    ['a negative interval', 'EMQ_BAD_SCHEDULE', { every: -1000 }, {}, {}],
    ['an interval over ten years', 'EMQ_BAD_SCHEDULE', { every: 315_360_000_001 }, {}, {}],
    ['an interval of NaN', 'EMQ_BAD_SCHEDULE', { every: Number.NaN }, {}, {}],
    ['an interval below 50 ms', 'EMQ_BAD_SCHEDULE', { every: 10 }, {}, {}],
    ['cron and every together', 'EMQ_BAD_SCHEDULE', { cron: '* * * * *', every: 1000 }, {}, {}],
    ['an unknown missed policy', 'EMQ_BAD_SCHEDULE', { every: 1000 }, {}, { missed: 'all' }],
    ['an unknown option key', 'EMQ_BAD_OPTION', { every: 1000 }, {}, { atempts: 3 }],
    ['bad attempts', 'EMQ_BAD_OPTION', { every: 1000 }, {}, { attempts: 1001 }],
    ['a payload that is not JSON', 'EMQ_BAD_PAYLOAD', { every: 1000 }, () => 1, {}],
  ])('%s → %s', async (_what, code, spec, payload, opts) => {
    const q = randomQueue('sbad');
    expect(await codeOf(f.queues.schedule(q, 'beat', spec as ScheduleSpec, payload, opts as ScheduleOptions))).toBe(code);
    expect(await queueKeysIn(f.raw, q)).toEqual([]);
  });

  it('a bad schedule or queue name, a payload over the limit: typed, nothing written', async () => {
    const q = randomQueue('sbad');
    expect(await codeOf(f.queues.schedule(q, 'a b', { every: 1000 }, {}))).toBe('EMQ_BAD_NAME');
    expect(await codeOf(f.queues.schedule(q, '', { every: 1000 }, {}))).toBe('EMQ_BAD_NAME');
    expect(await codeOf(f.queues.schedule('bad{q}', 'beat', { every: 1000 }, {}))).toBe('EMQ_BAD_NAME');
    expect(await codeOf(f.queues.schedule(q, 'beat', { every: 1000 }, 'x'.repeat(600_000)))).toBe('EMQ_PAYLOAD_TOO_LARGE');
    expect(await codeOf(f.queues.unschedule(q, 'a:b'))).toBe('EMQ_BAD_NAME');
    expect(await queueKeysIn(f.raw, q)).toEqual([]);
  });

  it('@Processor refuses bad schedules when the class is defined', () => {
    const define = (schedules: unknown) => () => {
      class W {
        @Processor('sq', { schedules } as never)
        run(): void {}
      }
      return W;
    };
    expect(define([{ name: 'a', cron: 'nope' }])).toThrow(InvalidScheduleError);
    expect(define([{ name: 'a', every: 1000 }, { name: 'a', every: 2000 }])).toThrow(InvalidScheduleError);
    expect(define([{ name: 'a', every: 1000, tz: 'UTC' }])).toThrow(InvalidScheduleError);
    expect(define([{ name: 'a', every: 1000, paylod: 1 }])).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(define([{ name: 'a', every: 1000, payload: { n: 1 }, missed: 'once', graceMs: 1000 }])).not.toThrow();
  });
});

describe('schedules: upsert by name', () => {
  it('created, unchanged (tick kept), replaced (tick restarted); unschedule; listing', async () => {
    const q = randomQueue('sup');
    expect(await f.queues.schedule(q, 'nightly', { cron: '0 3 * * *', tz: 'Europe/Berlin' }, { n: 1 }, { attempts: 2 })).toBe('created');
    const [a] = await f.queues.schedules(q);
    expect(a).toMatchObject({ name: 'nightly', cron: '0 3 * * *', tz: 'Europe/Berlin', payload: { n: 1 }, attempts: 2, missed: 'skip', graceMs: 5000 });
    expect(a.next!.getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect(await f.queues.schedule(q, 'nightly', { cron: '0 3 * * *', tz: 'Europe/Berlin' }, { n: 1 }, { attempts: 2 })).toBe('unchanged');
    expect((await f.queues.schedules(q))[0].next).toEqual(a.next);
    expect(await f.queues.schedule(q, 'nightly', { every: 60_000 }, { n: 2 })).toBe('replaced');
    expect(await f.queues.schedule(q, 'beat', { every: 1000 }, null)).toBe('created');
    const list = await f.queues.schedules(q);
    expect(list.map((s) => [s.name, s.every, s.payload])).toEqual([
      ['beat', 1000, null],
      ['nightly', 60_000, { n: 2 }],
    ]);
    expect(await f.queues.unschedule(q, 'nightly')).toBe(true);
    expect(await f.queues.unschedule(q, 'nightly')).toBe(false);
    expect((await f.queues.schedules(q)).map((s) => s.name)).toEqual(['beat']);
  });
});

describe('schedules: a schedule that cannot be planned', () => {
  it('is warned about once and does not stop the others of its queue', async () => {
    const q = randomQueue('scorrupt');
    const k = queueKeys(q);
    await f.raw.hset(k.schedules, 'broken', 'not json');
    await f.raw.zadd(k.ticks, 1000, 'broken');
    await f.raw.hset(k.schedules, 'alien', JSON.stringify({ cron: 'every full moon', payload: '{}', missed: 'skip', grace: 5000 }));
    await f.raw.zadd(k.ticks, 1001, 'alien');
    expect(await f.queues.schedule(q, 'good', { every: 100 }, { ok: true })).toBe('created');
    const warnings: string[] = [];
    const seen: TickRecord[] = [];
    const s = new Scheduler(f.conn, { onTick: (t) => seen.push(t), logger: { warn: (m) => warnings.push(m) } });
    s.watch(q);
    s.start();
    try {
      await new Promise((r) => setTimeout(r, 800));
    } finally {
      await s.stop();
    }
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen.every((t) => t.name === 'good' && t.jobId)).toBe(true);
    expect(warnings.filter((w) => w.includes('broken'))).toHaveLength(1);
    expect(warnings.filter((w) => w.includes('alien'))).toHaveLength(1);
    expect(await f.raw.zscore(k.ticks, 'broken')).toBe('1000'); // left as it was
  });
});
