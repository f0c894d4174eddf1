import { L1, type L1Entry } from '../../src/cache/l1.js';
import { SingleFlight } from '../../src/cache/single-flight.js';

let now = 1_000_000;
const clock = (): number => now;
const entry = (json: string | undefined, ver: string, ttl = 1000, grace = 0): L1Entry => ({
  json, ver, expiresAt: now + ttl, graceUntil: now + ttl + grace,
});
const v = (n: number): string => `ver${String(n).padStart(11, '0')}`;

describe('L1', () => {
  it('evicts the least recently used entry past maxEntries', () => {
    const l1 = new L1({ maxEntries: 3, maxBytes: 1e9, tombstoneMs: 100 }, clock);
    for (const k of ['a', 'b', 'c']) l1.set('ns', k, entry('1', v(1)));
    l1.get('ns', 'a');
    l1.set('ns', 'd', entry('1', v(1)));
    expect(['a', 'b', 'c', 'd'].map((k) => l1.get('ns', k) !== undefined)).toEqual([true, false, true, true]);
    expect(l1.size).toBe(3);
  });

  it('keeps exact LRU order over many evictions, touches, removals and a clear (the kept eviction cursor)', () => {
    const l1 = new L1({ maxEntries: 50, maxBytes: 1e9, tombstoneMs: 100 }, clock);
    const model: string[] = []; // least recently used first
    let seed = 7;
    const rnd = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 8000; i++) {
      const key = `k${rnd(120)}`;
      const op = rnd(10);
      if (op < 5) {
        const at = model.indexOf(key);
        if (at >= 0) model.splice(at, 1);
        expect(l1.set('ns', key, entry('1', v(i + 1)))).toBe(true);
        model.push(key);
        if (model.length > 50) model.shift();
      } else if (op < 9) {
        const hit = l1.get('ns', key) !== undefined;
        const at = model.indexOf(key);
        expect(hit).toBe(at >= 0);
        if (at >= 0) model.push(...model.splice(at, 1));
      } else {
        l1.applyInvalidation('ns', key, v(i + 1));
        const at = model.indexOf(key);
        if (at >= 0) model.splice(at, 1);
      }
      if (i === 4000) {
        l1.clear();
        model.length = 0;
      }
    }
    expect(l1.size).toBe(model.length);
    for (const key of model) expect(l1.get('ns', key)).toBeDefined();
  });

  it('evicts past maxBytes and never holds a value larger than the bound', () => {
    const l1 = new L1({ maxEntries: 100, maxBytes: 10, tombstoneMs: 100 }, clock);
    l1.set('ns', 'a', entry('"1234"', v(1)));
    l1.set('ns', 'b', entry('"5678"', v(1)));
    expect(l1.bytes).toBe(12 - 6);
    expect(l1.get('ns', 'a')).toBeUndefined();
    expect(l1.set('ns', 'big', entry('"12345678901"', v(1)))).toBe(false);
    expect(l1.get('ns', 'b')?.json).toBe('"5678"');
  });

  it('ignores a write older than the version held; keeps fresh, stale and expired apart', () => {
    const l1 = new L1({ maxEntries: 10, maxBytes: 1e9, tombstoneMs: 100 }, clock);
    expect(l1.set('ns', 'k', entry('2', v(2), 100, 100))).toBe(true);
    expect(l1.set('ns', 'k', entry('1', v(1)))).toBe(false);
    expect(l1.set('ns', 'k', entry('2', v(2)))).toBe(false);
    expect(l1.get('ns', 'k')?.json).toBe('2');
    now += 150;
    const stale = l1.get('ns', 'k');
    expect(stale && stale.expiresAt <= now && stale.graceUntil > now).toBe(true);
    now += 100;
    expect(l1.get('ns', 'k')).toBeUndefined();
    expect(l1.size).toBe(0);
  });

  it('applyInvalidation drops older entries, and refuses older fills for the tombstone window', () => {
    const l1 = new L1({ maxEntries: 10, maxBytes: 1e9, tombstoneMs: 100 }, clock);
    l1.set('ns', 'k', entry('5', v(5)));
    l1.applyInvalidation('ns', 'k', v(4));
    expect(l1.get('ns', 'k')?.json).toBe('5');
    l1.applyInvalidation('ns', 'k', v(6));
    expect(l1.get('ns', 'k')).toBeUndefined();
    expect(l1.set('ns', 'k', entry('old', v(3)))).toBe(false);
    // The announced version itself is the write that was announced (a set), never older data.
    expect(l1.set('ns', 'k', entry('announced', v(6)))).toBe(true);
    l1.applyInvalidation('ns', 'k', v(6));
    expect(l1.get('ns', 'k')?.json).toBe('announced');
    expect(l1.set('ns', 'k', entry('new', v(7)))).toBe(true);
    l1.applyInvalidation('ns', 'j', v(10));
    now += 101;
    expect(l1.set('ns', 'j', entry('late', v(9)))).toBe(true); // the window has passed
  });

  it('dropNamespace drops only that namespace', () => {
    const l1 = new L1({ maxEntries: 10, maxBytes: 1e9, tombstoneMs: 100 }, clock);
    l1.set('a', 'k', entry('1', v(1)));
    l1.set('ab', 'k', entry('1', v(1)));
    l1.dropNamespace('a');
    expect(l1.get('a', 'k')).toBeUndefined();
    expect(l1.get('ab', 'k')).toBeDefined();
  });
});

describe('SingleFlight', () => {
  it('shares one run among concurrent callers, and clears after settling (even a sync throw)', async () => {
    const sf = new SingleFlight();
    let runs = 0;
    const fn = async (): Promise<number> => {
      runs++;
      await new Promise((r) => setTimeout(r, 5));
      return runs;
    };
    expect(await Promise.all([sf.run('k', fn), sf.run('k', fn), sf.run('k', fn)])).toEqual([1, 1, 1]);
    expect(sf.size).toBe(0);
    await expect(sf.run('x', () => { throw new Error('sync'); })).rejects.toThrow('sync');
    expect(sf.size).toBe(0);
    expect(await sf.run('k', fn)).toBe(2);
  });
});
