import { compileCron, tzOffsetMs, wallToInstant } from '../../src/queue/schedules/cron.js';
import { InvalidScheduleError } from '../../src/core/errors.js';

const H = 3_600_000;
/** The first `n` ticks after `from` (ISO), as ISO minutes. */
function ticks(expr: string, tz: string | undefined, from: string, n: number): string[] {
  const next = compileCron(expr, tz);
  const out: string[] = [];
  let t = Date.parse(from);
  for (let i = 0; i < n; i++) {
    const x = next(t);
    if (x === null) break;
    expect(x).toBeGreaterThan(t);
    out.push(new Date(x).toISOString().slice(0, 16));
    t = x;
  }
  return out;
}

describe('cron ticks across DST transitions (Europe/Berlin: 2026-03-29 02:00 → 03:00, 2026-10-25 03:00 → 02:00)', () => {
  it('a daily time a spring-forward skips fires once, at the end of the gap (no skip)', () => {
    expect(ticks('30 2 * * *', 'Europe/Berlin', '2026-03-27T12:00:00Z', 3)).toEqual(['2026-03-28T01:30', '2026-03-29T01:00', '2026-03-30T00:30']);
  });

  it('a daily time a fall-back repeats fires once, at its first occurrence (no double)', () => {
    expect(ticks('30 2 * * *', 'Europe/Berlin', '2026-10-23T12:00:00Z', 3)).toEqual(['2026-10-24T00:30', '2026-10-25T00:30', '2026-10-26T01:30']);
  });

  it('several times inside the skipped hour collapse into one tick at the gap end; in the repeated hour each fires once', () => {
    // croner alone skips */30 2 entirely on the spring day and fires it four times on the fall day.
    expect(ticks('*/30 2 * * *', 'Europe/Berlin', '2026-03-28T23:30:00Z', 3)).toEqual(['2026-03-29T01:00', '2026-03-30T00:00', '2026-03-30T00:30']);
    expect(ticks('*/30 2 * * *', 'Europe/Berlin', '2026-10-24T23:30:00Z', 3)).toEqual(['2026-10-25T00:00', '2026-10-25T00:30', '2026-10-26T01:00']);
  });

  it('an hourly (wildcard hour) expression follows real time: every real hour once, through both transitions', () => {
    expect(ticks('0 * * * *', 'Europe/Berlin', '2026-03-28T23:30:00Z', 4)).toEqual(['2026-03-29T00:00', '2026-03-29T01:00', '2026-03-29T02:00', '2026-03-29T03:00']);
    expect(ticks('0 * * * *', 'Europe/Berlin', '2026-10-24T23:30:00Z', 4)).toEqual(['2026-10-25T00:00', '2026-10-25T01:00', '2026-10-25T02:00', '2026-10-25T03:00']);
    expect(ticks('*/20 * * * *', 'Europe/Berlin', '2026-03-29T00:30:00Z', 4)).toEqual(['2026-03-29T00:40', '2026-03-29T01:00', '2026-03-29T01:20', '2026-03-29T01:40']);
  });

  it('a step in the hour field (0 */2) fires at the even wall-clock hours, each once: never twice at the repeated 02:00', () => {
    // Spring-forward: 02:00 CET does not exist; it fires at the gap's end (03:00 CEST = 01:00Z).
    // Wall times 20, 22, 00, 03, 04, 06, 08, 10; real gaps 2, 2, 2, 1, 2, 2, 2 h.
    expect(ticks('0 */2 * * *', 'Europe/Berlin', '2026-03-28T18:00:00Z', 8)).toEqual([
      '2026-03-28T19:00', '2026-03-28T21:00', '2026-03-28T23:00', '2026-03-29T01:00', '2026-03-29T02:00', '2026-03-29T04:00', '2026-03-29T06:00', '2026-03-29T08:00',
    ]);
    // Fall-back: 02:00 happens twice (00:00Z CEST, 01:00Z CET); it fires at the first only.
    // Wall times 22, 00, 02, 04, 06, 08, 10, 12; real gaps 2, 2, 3, 2, 2, 2, 2 h.
    expect(ticks('0 */2 * * *', 'Europe/Berlin', '2026-10-24T18:00:00Z', 8)).toEqual([
      '2026-10-24T20:00', '2026-10-24T22:00', '2026-10-25T00:00', '2026-10-25T03:00', '2026-10-25T05:00', '2026-10-25T07:00', '2026-10-25T09:00', '2026-10-25T11:00',
    ]);
    // New York: the gap holds 02:00 (fires at 03:00 EDT); the repeated hour is 01:xx, which */2 never names.
    expect(ticks('0 */2 * * *', 'America/New_York', '2026-03-07T23:00:00Z', 6)).toEqual([
      '2026-03-08T01:00', '2026-03-08T03:00', '2026-03-08T05:00', '2026-03-08T07:00', '2026-03-08T08:00', '2026-03-08T10:00',
    ]);
    expect(ticks('0 */2 * * *', 'America/New_York', '2026-10-31T23:00:00Z', 5)).toEqual([
      '2026-11-01T00:00', '2026-11-01T02:00', '2026-11-01T04:00', '2026-11-01T07:00', '2026-11-01T09:00',
    ]);
    // Every hour stays real time: */1 is *, both copies of the repeated hour fire.
    expect(ticks('0 */1 * * *', 'Europe/Berlin', '2026-10-24T23:30:00Z', 4)).toEqual(['2026-10-25T00:00', '2026-10-25T01:00', '2026-10-25T02:00', '2026-10-25T03:00']);
  });

  it('30 1 * * * in New York: once a day on both transition days (01:30 is repeated in the fall: first only)', () => {
    expect(ticks('30 1 * * *', 'America/New_York', '2026-03-07T12:00:00Z', 3)).toEqual(['2026-03-08T06:30', '2026-03-09T05:30', '2026-03-10T05:30']);
    expect(ticks('30 1 * * *', 'America/New_York', '2026-10-31T00:00:00Z', 3)).toEqual(['2026-10-31T05:30', '2026-11-01T05:30', '2026-11-02T06:30']);
  });

  it('*/15 * * * * in New York follows real time: every 15 real minutes through both transitions', () => {
    // Spring: 01:45 EST (06:45Z) is followed by 03:00 EDT (07:00Z), 15 real minutes later.
    expect(ticks('*/15 * * * *', 'America/New_York', '2026-03-08T06:30:00Z', 6)).toEqual([
      '2026-03-08T06:45', '2026-03-08T07:00', '2026-03-08T07:15', '2026-03-08T07:30', '2026-03-08T07:45', '2026-03-08T08:00',
    ]);
    // Fall: the repeated 01:xx hour is two real hours, each of its quarters fires (01:00 EDT … 01:45 EST).
    expect(ticks('*/15 * * * *', 'America/New_York', '2026-11-01T04:50:00Z', 9)).toEqual([
      '2026-11-01T05:00', '2026-11-01T05:15', '2026-11-01T05:30', '2026-11-01T05:45', '2026-11-01T06:00', '2026-11-01T06:15', '2026-11-01T06:30', '2026-11-01T06:45', '2026-11-01T07:00',
    ]);
  });

  it('holds in another zone and for a 30-minute shift (America/New_York, Australia/Lord_Howe)', () => {
    expect(ticks('0 2 * * *', 'America/New_York', '2026-03-07T12:00:00Z', 2)).toEqual(['2026-03-08T07:00', '2026-03-09T06:00']);
    expect(ticks('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', 2)).toEqual(['2026-11-01T05:30', '2026-11-02T06:30']);
    expect(ticks('0 0 * * *', 'Australia/Lord_Howe', '2026-04-03T00:00:00Z', 3)).toEqual(['2026-04-03T13:00', '2026-04-04T13:00', '2026-04-05T13:30']);
  });

  it('a seconds field in a fixed hour steps second by second, also through the repeated hour', () => {
    const next = compileCron('*/10 * 2 * * *', 'Europe/Berlin');
    expect(next(Date.parse('2026-06-01T12:00:00Z'))).toBe(Date.parse('2026-06-02T00:00:00Z'));
    expect(next(Date.parse('2026-06-02T00:00:00Z'))).toBe(Date.parse('2026-06-02T00:00:10Z'));
    // In the second copy of 02:xx on the fall day nothing fires: the next tick is the next day.
    expect(next(Date.parse('2026-10-25T01:00:05Z'))).toBe(Date.parse('2026-10-26T01:00:00Z'));
  });

  it('UTC (no zone) and seconds fields', () => {
    expect(ticks('*/15 * * * * *', undefined, '2026-01-01T00:00:00Z', 2).length).toBe(2);
    expect(compileCron('*/15 * * * * *')(Date.parse('2026-01-01T00:00:00Z'))).toBe(Date.parse('2026-01-01T00:00:15Z'));
  });
});

describe('wall-clock mapping', () => {
  it('offsets and wall times map as the zone says', () => {
    expect(tzOffsetMs('Europe/Berlin', Date.parse('2026-07-01T00:00:00Z'))).toBe(2 * H);
    expect(tzOffsetMs('Europe/Berlin', Date.parse('2026-01-01T00:00:00Z'))).toBe(1 * H);
    expect(tzOffsetMs('UTC', 0)).toBe(0);
    // 02:30 on the spring day does not exist: the gap's end, 01:00Z.
    expect(wallToInstant('Europe/Berlin', Date.parse('2026-03-29T02:30:00Z'))).toBe(Date.parse('2026-03-29T01:00:00Z'));
    // 02:30 on the fall day exists twice: the first, 00:30Z.
    expect(wallToInstant('Europe/Berlin', Date.parse('2026-10-25T02:30:00Z'))).toBe(Date.parse('2026-10-25T00:30:00Z'));
  });
});

describe('bad cron input is EMQ_BAD_SCHEDULE', () => {
  it.each([
    ['not a cron', undefined],
    ['61 * * * *', undefined],
    ['* * * * * * * *', undefined],
    ['', undefined],
    ['x'.repeat(201), undefined],
    ['0 0 30 2 *', undefined], // never fires
    ['* * * * *', 'Mars/Olympus'],
    ['* * * * *', ''],
  ])('%s (tz %s)', (expr, tz) => {
    const err = (() => {
      try {
        compileCron(expr, tz);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(InvalidScheduleError);
    expect((err as InvalidScheduleError).code).toBe('EMQ_BAD_SCHEDULE');
  });

  it('a non-string expression or zone', () => {
    expect(() => compileCron(5)).toThrow(InvalidScheduleError);
    expect(() => compileCron('* * * * *', 5)).toThrow(InvalidScheduleError);
  });
});
