import { EchoMqError } from '../../src/index.js';
import { InvalidIdError } from '../../src/core/errors.js';
import { IdMinter, assertBrandedId, composeId, decodeBody, encodeBody, isBrandedId, parseId, ID_EPOCH_MS } from '../../src/protocol.js';
import { BASE62, BODY_LENGTH, ID_LENGTH, MAX_NODE, SEQ_BITS } from '../../src/core/ids.js';
import { codeOf, prng } from '../helpers/units.js';

const MAX_U64 = (1n << 64n) - 1n;
const MAX_SEQ = (1 << SEQ_BITS) - 1;

/** A random u64 of random magnitude (so short and long values both occur). */
function randomU64(next: () => number): bigint {
  const full = (BigInt(next()) << 32n) | BigInt(next());
  return full >> BigInt(next() % 64);
}

const sign = (n: number | bigint): number => (n > 0 ? 1 : n < 0 ? -1 : 0);
const byteCmp = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'latin1'), Buffer.from(b, 'latin1'));

describe('base62 body codec', () => {
  it('round-trips the extremes: 0 and 2^64-1', () => {
    expect(encodeBody(0n)).toBe('00000000000');
    expect(decodeBody('00000000000')).toBe(0n);
    expect(encodeBody(MAX_U64)).toBe('LygHa16AHYF');
    expect(decodeBody('LygHa16AHYF')).toBe(MAX_U64);
    expect(encodeBody(61n)).toBe('0000000000z');
    expect(encodeBody(62n)).toBe('00000000010');
  });

  it('uses the alphabet 0-9A-Za-z in ASCII order', () => {
    expect(BASE62).toBe('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz');
    for (let i = 0; i < 62; i++) {
      const body = encodeBody(BigInt(i));
      expect(body.slice(-1)).toBe(BASE62[i]);
      if (i > 0) expect(BASE62.charCodeAt(i)).toBeGreaterThan(BASE62.charCodeAt(i - 1));
    }
  });

  it('always encodes to a fixed width (11-char body, 14-char id)', () => {
    expect(BODY_LENGTH).toBe(11);
    expect(ID_LENGTH).toBe(14);
    for (const v of [0n, 1n, 61n, 62n, 1n << 32n, MAX_U64 - 1n, MAX_U64]) {
      expect(encodeBody(v)).toHaveLength(11);
      expect(`job${encodeBody(v)}`).toHaveLength(14);
    }
    expect(composeId('job', { ms: ID_EPOCH_MS, node: 0, seq: 0 })).toBe('job00000000000');
  });

  it('refuses values outside 0..2^64-1 and bodies above 2^64-1 or with bad digits', () => {
    expect(codeOf(() => encodeBody(-1n))).toBe('EMQ_BAD_ID');
    expect(codeOf(() => encodeBody(MAX_U64 + 1n))).toBe('EMQ_BAD_ID');
    expect(codeOf(() => decodeBody('LygHa16AHYG'))).toBe('EMQ_BAD_ID');
    expect(codeOf(() => decodeBody('zzzzzzzzzzz'))).toBe('EMQ_BAD_ID');
    expect(codeOf(() => decodeBody('0000000000-'))).toBe('EMQ_BAD_ID');
  });

  it('property: byte order of encodings equals numeric order, and decode inverts encode (seeded)', () => {
    const next = prng(0xec40);
    const values: bigint[] = [0n, MAX_U64];
    for (let i = 0; i < 5000; i++) {
      const a = randomU64(next);
      values.push(a);
      // a close neighbour: differs only in the low digits, the hard case for ordering
      const near = a + BigInt(next() % 5000) - 2500n;
      if (near >= 0n && near <= MAX_U64) values.push(near);
    }
    for (let i = 1; i < values.length; i++) {
      const a = values[i - 1];
      const b = values[i];
      const ea = encodeBody(a);
      const eb = encodeBody(b);
      expect(decodeBody(ea)).toBe(a);
      expect(sign(byteCmp(ea, eb))).toBe(sign(a - b));
    }
    const byNumber = [...values].sort((x, y) => sign(x - y)).map(encodeBody);
    const byBytes = values.map(encodeBody).sort(byteCmp);
    expect(byBytes).toEqual(byNumber);
  });

  it('property: byte order of whole ids equals (ms, node, seq) order (seeded)', () => {
    const next = prng(7);
    const parts = Array.from({ length: 3000 }, () => ({
      ms: ID_EPOCH_MS + (next() % 1_000_000) * 1000 + (next() % 3),
      node: next() % (MAX_NODE + 1),
      seq: next() % (MAX_SEQ + 1),
    }));
    const tuple = (p: { ms: number; node: number; seq: number }) => [p.ms, p.node, p.seq];
    for (let i = 1; i < parts.length; i++) {
      const [a, b] = [tuple(parts[i - 1]), tuple(parts[i])];
      const expected = sign(a[0] - b[0]) || sign(a[1] - b[1]) || sign(a[2] - b[2]);
      expect(sign(byteCmp(composeId('job', parts[i - 1]), composeId('job', parts[i])))).toBe(expected);
    }
  });
});

describe('IdMinter', () => {
  const T = Date.UTC(2026, 0, 1);

  it('stays strictly increasing when the clock steps backwards', () => {
    let now = T;
    const minter = new IdMinter(12, () => now);
    const ids: string[] = [];
    for (const step of [0, 5, 5, -3, -100, 0, 2, -1000, 7000, -7000, 1]) {
      now += step;
      for (let i = 0; i < 20; i++) ids.push(minter.next('job'));
    }
    for (let i = 1; i < ids.length; i++) expect(byteCmp(ids[i - 1], ids[i])).toBeLessThan(0);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) {
      expect(id).toHaveLength(14);
      expect(parseId(id).node).toBe(12);
    }
  });

  it('borrows the next millisecond when more than 4096 ids are minted in one ms', () => {
    const minter = new IdMinter(3, () => T);
    const ids = Array.from({ length: 3 * 4096 + 10 }, () => minter.next('job'));
    for (let i = 1; i < ids.length; i++) expect(byteCmp(ids[i - 1], ids[i])).toBeLessThan(0);
    const first = parseId(ids[0]);
    expect(first.ms).toBeGreaterThanOrEqual(T);
    ids.forEach((id, k) => {
      const p = parseId(id);
      expect(p.seq).toBe(k % 4096);
      expect(p.ms).toBe(first.ms + Math.floor(k / 4096));
      expect(p.node).toBe(3);
    });
  });

  it('mints at the clock instant with sequence 0 once the clock moves on', () => {
    let now = T;
    const minter = new IdMinter(1023, () => now);
    minter.next('job');
    now = T + 50;
    const p = parseId(minter.next('evt'));
    expect(p).toEqual({ ns: 'evt', ms: T + 50, node: 1023, seq: 0 });
  });

  it('keeps order across a rebind and refuses node numbers outside 0..1023', () => {
    const minter = new IdMinter(900, () => T);
    const before = minter.next('job');
    minter.rebind(4);
    const after = minter.next('job');
    expect(byteCmp(before, after)).toBeLessThan(0);
    expect(parseId(after).node).toBe(4);
    expect(codeOf(() => minter.rebind(1024))).toBe('EMQ_BAD_ID');
    expect(codeOf(() => new IdMinter(-1, () => T))).toBe('EMQ_BAD_ID');
    expect(codeOf(() => new IdMinter(1.5, () => T))).toBe('EMQ_BAD_ID');
  });
});

describe('parseId and composeId', () => {
  it('parseId recovers ns, ms, node and seq', () => {
    const cases = [
      { ms: ID_EPOCH_MS, node: 0, seq: 0 },
      { ms: T0(), node: 1023, seq: 4095 },
      { ms: T0() + 123_456, node: 512, seq: 1 },
    ];
    for (const c of cases) expect(parseId(composeId('abc', c))).toEqual({ ns: 'abc', ...c });
  });

  it('composeId of an instant (node 0, seq 0) is the smallest id of that ms', () => {
    const ms = T0() + 777;
    const floor = composeId('job', { ms, node: 0, seq: 0 });
    const prevMax = composeId('job', { ms: ms - 1, node: MAX_NODE, seq: MAX_SEQ });
    const nextFloor = composeId('job', { ms: ms + 1, node: 0, seq: 0 });
    expect(byteCmp(prevMax, floor)).toBeLessThan(0);
    for (const [node, seq] of [[0, 1], [1, 0], [MAX_NODE, MAX_SEQ], [400, 17]]) {
      const id = composeId('job', { ms, node, seq });
      expect(byteCmp(floor, id)).toBeLessThan(0);
      expect(byteCmp(id, nextFloor)).toBeLessThan(0);
    }
    let now = ms - 5;
    const minter = new IdMinter(77, () => now);
    now = ms;
    const minted = minter.next('job');
    expect(byteCmp(floor, minted)).toBeLessThan(0);
    expect(byteCmp(minted, nextFloor)).toBeLessThan(0);
  });

  it('refuses an instant before the epoch and a bad namespace', () => {
    expect(codeOf(() => composeId('job', { ms: ID_EPOCH_MS - 1, node: 0, seq: 0 }))).toBe('EMQ_BAD_ID');
    expect(codeOf(() => composeId('JOB', { ms: T0(), node: 0, seq: 0 }))).toBe('EMQ_BAD_NAME');
  });

  it('refuses parts it cannot round-trip (node/seq out of range, fractions) instead of spilling bits', () => {
    const bad = [
      { ms: T0(), node: MAX_NODE + 1, seq: 0 }, // would read back as ms + 1, node 0
      { ms: T0(), node: 0, seq: MAX_SEQ + 1 }, // would read back as node 1, seq 0
      { ms: T0(), node: -1, seq: 0 },
      { ms: T0(), node: 0, seq: -1 },
      { ms: T0() + 0.5, node: 0, seq: 0 },
      { ms: T0(), node: 1.5, seq: 0 },
    ];
    const outcome = bad.map((parts) => {
      try {
        const id = composeId('job', parts);
        return `accepted as ${JSON.stringify(parseId(id))}`;
      } catch (err) {
        return err instanceof EchoMqError ? err.code : `threw ${String(err)}`;
      }
    });
    expect(outcome).toEqual(bad.map(() => 'EMQ_BAD_ID'));
  });
});

describe('malformed ids', () => {
  const good = 'job' + encodeBody(123456789n);
  const malformed: [string, unknown][] = [
    ['too short', good.slice(0, 13)],
    ['too long', good + '0'],
    ['empty', ''],
    ['wrong namespace', 'evt' + good.slice(3)],
    ['upper-case namespace', 'JOB' + good.slice(3)],
    ['dash in body', 'job0000000000-'],
    ['underscore in body', 'job0000000000_'],
    ['space in body', 'job0000000000 '],
    ['non-ASCII letter', 'job0000000000é'],
    ['newline', 'job0000000000\n'],
    ['body just above 2^64-1', 'jobLygHa16AHYG'],
    ['body far above 2^64-1', 'jobzzzzzzzzzzz'],
    ['a number', 12345678901234],
    ['null', null],
    ['undefined', undefined],
  ];

  it('accepts the well-formed extremes', () => {
    expect(isBrandedId('job00000000000', 'job')).toBe(true);
    expect(isBrandedId('jobLygHa16AHYF', 'job')).toBe(true);
    expect(() => assertBrandedId(good, 'job')).not.toThrow();
  });

  it.each(malformed)('refuses %s with EMQ_BAD_ID', (_what, id) => {
    expect(isBrandedId(id, 'job')).toBe(false);
    expect(codeOf(() => assertBrandedId(id, 'job'))).toBe('EMQ_BAD_ID');
    if (typeof id === 'string' && !id.startsWith('evt')) {
      expect(codeOf(() => parseId(id))).toBe('EMQ_BAD_ID');
    }
  });

  it('the thrown error is an InvalidIdError', () => {
    expect(() => assertBrandedId('nope', 'job')).toThrow(InvalidIdError);
  });
});

function T0(): number {
  return Date.UTC(2026, 5, 1);
}
