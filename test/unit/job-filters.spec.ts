import { filterQuery, searchOptionsOf } from '../../src/dashboard/job-filter-form.js';
import { parseInstant, parseWhere, searchOptions } from '../../src/cli/job-filters.js';
import { checkSearch } from '../../src/admin/job-search.js';

// Issue 38: the filter texts of the dashboard's form and the CLI's flags, parsed before any read.
const NOW = Date.UTC(2026, 11, 7, 12, 0, 0);
const codeOf = (act: () => unknown): string => {
  try {
    act();
    return 'accepted';
  } catch (e) {
    return (e as { code?: string }).code ?? (e as Error).constructor.name;
  }
};

describe('the dashboard filter parameters', () => {
  it('ignores empty fields; an instant without a zone is UTC; a duration is that long ago', () => {
    expect(filterQuery(new URLSearchParams('status=dead&from=&error=&equals='))).toBeUndefined();
    const f = filterQuery(new URLSearchParams('from=2026-12-07T10:00&to=15m&error=Time out&field= user.id &equals=42'));
    expect(f).toEqual({ from: '2026-12-07T10:00', to: '15m', error: 'Time out', field: 'user.id', equals: '42' });
    expect(searchOptionsOf(f!, NOW)).toEqual({ from: new Date(Date.UTC(2026, 11, 7, 10, 0)), to: new Date(NOW - 15 * 60_000), error: 'Time out', field: { path: 'user.id', equals: '42' } });
    expect(searchOptionsOf({ from: '2026-12-07T10:00+02:00' }, NOW).from).toEqual(new Date(Date.UTC(2026, 11, 7, 8, 0)));
    expect(searchOptionsOf({ field: 'tag' }, NOW).field).toEqual({ path: 'tag', equals: '' });
  });

  it('refuses a malformed instant and a value without its field (EMQ_BAD_OPTION)', () => {
    for (const f of [{ from: 'yesterday' }, { to: '2026-13-45T10:00' }, { from: '1 fortnight' }, { equals: '1' }]) expect([f, codeOf(() => searchOptionsOf(f, NOW))]).toEqual([f, 'EMQ_BAD_OPTION']);
  });
});

describe('the CLI filter flags', () => {
  it('parses --since / --until and --where path=value; refuses the rest as usage errors', () => {
    expect(parseInstant('2h', '--since', NOW)).toEqual(new Date(NOW - 7_200_000));
    expect(parseInstant('2026-12-07T10:00:00Z', '--since', NOW)).toEqual(new Date(Date.UTC(2026, 11, 7, 10)));
    expect(parseWhere('a.b=x=y')).toEqual({ path: 'a.b', equals: 'x=y' });
    expect(searchOptions({ error: 'timeout', where: 'user.id=42', scan: '100' })).toEqual({ error: 'timeout', field: { path: 'user.id', equals: '42' }, scan: 100 });
    for (const bad of [() => parseInstant('soon', '--since'), () => parseInstant('2026-99-99', '--until'), () => parseWhere('user.id'), () => parseWhere('=1')]) expect(codeOf(bad)).toBe('CliUsageError');
  });
});

describe('checkSearch', () => {
  it('checks every filter before any read and lower-cases the texts', () => {
    expect(checkSearch({ status: 'dead', error: 'TimeOut', field: { path: 'items.0.sku', equals: 'A' } })).toMatchObject({ error: 'timeout', field: { path: ['items', '0', 'sku'], equals: 'A' }, limit: 50, scan: 2000, from: -Infinity, to: Infinity });
    for (const o of [{ status: 'dead', error: '^a.*$' }, { status: 'dead', payload: '/x/' }, { status: 'dead', field: { path: 'a b', equals: '1' } }, { status: 'dead', from: 8.7e15 }]) {
      expect([o, codeOf(() => checkSearch(o as never))]).toEqual([o, 'EMQ_BAD_OPTION']);
    }
  });
});
