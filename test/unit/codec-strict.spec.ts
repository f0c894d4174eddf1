import { encodePayload, refuseJsonChanges, resolveCodec } from '../../src/core/codec.js';
import { EchoMqError } from '../../src/index.js';

/** The message of the EchoMqError `act` throws, after checking its code. */
function refusal(act: () => unknown, code = 'EMQ_BAD_PAYLOAD'): string {
  try {
    act();
  } catch (err) {
    expect(err).toBeInstanceOf(EchoMqError);
    expect(err).toMatchObject({ code });
    return (err as Error).message;
  }
  throw new Error('expected a refusal');
}

class Order {
  constructor(readonly id: string) {}
  total(): number {
    return 1;
  }
}
class Money {
  constructor(readonly cents: number) {}
  toJSON(): string {
    return `${this.cents}c`;
  }
}

describe('the strict codec: values JSON would silently change are refused, naming their path', () => {
  const refused: [string, unknown, string][] = [
    ['a Date', { items: [{}, {}, { at: new Date(0) }] }, 'payload.items[2].at: a Date becomes a string in JSON; pass date.toISOString()'],
    ['a top-level Date', new Date(0), 'payload: a Date becomes a string in JSON'],
    ['undefined in an array', { ids: [1, undefined] }, 'payload.ids[1]: undefined in an array becomes null in JSON; pass null'],
    ['a hole in an array', { ids: [1, , 3] }, 'payload.ids[1]: undefined in an array becomes null'],
    ['NaN', { price: NaN }, 'payload.price: NaN becomes null in JSON'],
    ['Infinity', { n: [Infinity] }, 'payload.n[0]: Infinity becomes null in JSON'],
    ['-Infinity', { n: -Infinity }, 'payload.n: -Infinity becomes null in JSON'],
    ['a Map', { m: new Map([['a', 1]]) }, 'payload.m: a Map becomes {} in JSON; pass Object.fromEntries(map)'],
    ['a Set', { s: new Set([1]) }, 'payload.s: a Set becomes {} in JSON; pass [...set]'],
    ['a bigint', { n: { big: 10n } }, 'payload.n.big: a bigint is not JSON; pass String(value)'],
    ['a class instance', { order: new Order('o1') }, 'payload.order: an instance of Order becomes a plain object in JSON (its prototype and methods are lost)'],
    ['a typed array', { bytes: new Uint8Array(2) }, 'payload.bytes: an instance of Uint8Array becomes a plain object'],
    ['an Error', { cause: new Error('x') }, 'payload.cause: an instance of Error becomes a plain object'],
    ['a function in an object', { f: () => 1 }, 'payload.f: a function is not data: JSON leaves it out'],
    ['a key that is no identifier', { 'a b': [new Date(0)] }, 'payload["a b"][0]: a Date'],
  ];
  it.each(refused)('%s', (_what, value, message) => {
    const m = refusal(() => encodePayload(value, 1 << 20, 'strict'));
    expect(m).toContain(message);
    expect(m).toContain("set codec: 'json'");
  });

  it('names the root it is given (a cached value, an item of a batch)', () => {
    expect(refusal(() => encodePayload({ at: new Date(0) }, 1 << 20, 'strict', 'value'))).toMatch(/^value\.at: a Date/);
    expect(refusal(() => encodePayload([new Date(0)], 1 << 20, 'strict', '[3].payload'))).toMatch(/^\[3\]\.payload\[0\]: a Date/);
  });

  it('accepts what round-trips, and what JSON changes without a visible difference', () => {
    const ok: unknown[] = [
      { a: 1, b: 'x', c: true, d: null, e: [1, 'two', { f: [] }], g: {} },
      { optional: undefined }, // left out: reads back as undefined, as it was
      Object.assign(Object.create(null) as object, { a: 1 }),
      { price: new Money(150) }, // a toJSON is the class's own JSON form
      { buf: Buffer.from('hi') },
      { toJSON: () => 'x' },
      'text',
      0,
      null,
    ];
    for (const v of ok) expect(encodePayload(v, 1 << 20, 'strict')).toBe(JSON.stringify(v));
  });

  it("codec 'json' keeps JSON's conversions, the default of encodePayload", () => {
    const v = { at: new Date(0), n: NaN, m: new Map(), ids: [undefined] };
    expect(encodePayload(v, 1 << 20, 'json')).toBe('{"at":"1970-01-01T00:00:00.000Z","n":null,"m":{},"ids":[null]}');
    expect(encodePayload(v)).toBe(encodePayload(v, 1 << 20, 'json'));
  });

  it('leaves cycles to JSON (refused as before, the walk does not loop)', () => {
    const a: Record<string, unknown> = {};
    a.x = a;
    a.y = a;
    expect(refusal(() => encodePayload(a, 1 << 20, 'strict'))).toMatch(/not JSON-serialisable/);
  });

  it('refuseJsonChanges returns quietly for a clean value; resolveCodec checks the option', () => {
    expect(refuseJsonChanges({ a: [1, { b: 'c' }] })).toBeUndefined();
    expect(resolveCodec(undefined)).toBe('strict');
    expect(resolveCodec('json')).toBe('json');
    expect(refusal(() => resolveCodec('lenient', 'bus.codec'), 'EMQ_BAD_OPTION')).toBe('bus.codec must be "strict" or "json", got "lenient"');
  });
});
