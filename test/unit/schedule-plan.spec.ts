import { InvalidOptionError, InvalidScheduleError } from '../../src/core/errors.js';
import { checkProcessorSchedules, decodeSchedule, encodeSchedule, planTick, specSha } from '../../src/queue/schedules/schedule-plan.js';
import type { ScheduleSpec } from '../../src/queue/schedules/schedule-types.js';
import { createHash } from 'node:crypto';

const every = (ms: number, missed: 'skip' | 'once' = 'skip', graceMs = 1000) => encodeSchedule({ every: ms }, '{}', { missed, graceMs }).stored;

describe('schedule spec text', () => {
  it('the same declaration renders the same text (a repeated upsert is a no-op); another renders another', () => {
    const a = encodeSchedule({ cron: '0 * * * *', tz: 'Europe/Berlin' }, '{"n":1}', { attempts: 3 }).text;
    expect(encodeSchedule({ tz: 'Europe/Berlin', cron: '0 * * * *' }, '{"n":1}', { attempts: 3 }).text).toBe(a);
    expect(encodeSchedule({ cron: '0 * * * *', tz: 'Europe/Berlin' }, '{"n":2}', { attempts: 3 }).text).not.toBe(a);
    const back = decodeSchedule(a);
    expect([back.cron, back.tz, back.payload, back.attempts, back.missed, back.grace]).toEqual(['0 * * * *', 'Europe/Berlin', '{"n":1}', 3, 'skip', 5000]);
    expect(specSha(a)).toBe(createHash('sha1').update(a).digest('hex'));
  });

  it.each<[string, unknown, unknown]>([
    ['every 0', { every: 0 }, {}],
    ['every negative', { every: -200 }, {}],
    ['every fractional', { every: 200.5 }, {}],
    ['every NaN', { every: Number.NaN }, {}],
    ['every absurd', { every: 1e15 }, {}],
    ['cron and every', { cron: '* * * * *', every: 1000 }, {}],
    ['tz without cron', { every: 1000, tz: 'UTC' }, {}],
    ['neither', {}, {}],
    ['bad missed policy', { every: 1000 }, { missed: 'later' }],
    ['grace negative', { every: 1000 }, { graceMs: -1 }],
    ['grace absurd', { every: 1000 }, { graceMs: 1e12 }],
    ['bad cron', { cron: 'every day' }, {}],
    ['bad zone', { cron: '* * * * *', tz: 'Nowhere/Town' }, {}],
  ])('%s is EMQ_BAD_SCHEDULE', (_what, spec, opts) => {
    expect(() => encodeSchedule(spec as ScheduleSpec, '{}', opts as object)).toThrow(InvalidScheduleError);
  });

  it('bad job options are EMQ_BAD_OPTION, unknown option keys too', () => {
    expect(() => encodeSchedule({ every: 1000 }, '{}', { attempts: 0 })).toThrow(InvalidOptionError);
    expect(() => encodeSchedule({ every: 1000 }, '{}', { backoff: { type: 'fixed', delayMs: -1 } })).toThrow(InvalidOptionError);
    expect(() => encodeSchedule({ every: 1000 }, '{}', { retries: 3 } as object)).toThrow(InvalidOptionError);
    expect(() => encodeSchedule({ every: 1000, at: 5 } as ScheduleSpec, '{}')).toThrow(InvalidOptionError);
  });

  it('@Processor schedules: names checked and unique, unknown keys refused', () => {
    expect(() => checkProcessorSchedules([{ name: 'a', every: 1000 }], 'p')).not.toThrow();
    expect(() => checkProcessorSchedules([{ name: 'a', every: 1000 }, { name: 'a', cron: '* * * * *' }], 'p')).toThrow(InvalidScheduleError);
    expect(() => checkProcessorSchedules([{ name: 'a b', every: 1000 }], 'p')).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    expect(() => checkProcessorSchedules([{ name: 'a', every: 1000, evry: 5 }], 'p')).toThrow(InvalidOptionError);
    expect(() => checkProcessorSchedules('nope', 'p')).toThrow(InvalidScheduleError);
  });
});

describe('planTick: on time, or missed (skip / once)', () => {
  it('an on-time tick (at most grace late) writes its job at its instant and advances by one', () => {
    expect(planTick(every(200), 10_000, 9_800)).toEqual({ write: true, runAt: 10_000, next: 10_200 });
    expect(planTick(every(200), 10_000, 11_000)).toEqual({ write: true, runAt: 10_000, next: 10_200 });
  });

  it('missed ticks (beyond grace): skip advances without a job to the first tick within grace; once writes one job now', () => {
    expect(planTick(every(200, 'skip'), 10_000, 20_050)).toEqual({ write: false, runAt: 0, next: 19_200 });
    expect(planTick(every(200, 'once'), 10_000, 20_050)).toEqual({ write: true, runAt: 0, next: 19_200 });
    // The tick it advances to is then on time and runs on its own.
    expect(planTick(every(200, 'skip'), 19_200, 20_050).write).toBe(true);
  });

  it('a cron schedule advances to its first tick at or after now − grace', () => {
    const s = encodeSchedule({ cron: '0 * * * *' }, '{}', { graceMs: 0, missed: 'once' }).stored;
    const due = Date.parse('2026-01-01T00:00:00Z');
    const now = Date.parse('2026-01-01T05:30:00Z');
    expect(planTick(s, due, now)).toEqual({ write: true, runAt: 0, next: Date.parse('2026-01-01T06:00:00Z') });
  });
});
