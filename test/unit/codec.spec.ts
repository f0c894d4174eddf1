import { DEFAULT_MAX_PAYLOAD_BYTES, decodePayload, encodePayload } from '../../src/protocol.js';
import { EchoMqError } from '../../src/index.js';
import { InvalidPayloadError, PayloadTooLargeError } from '../../src/core/errors.js';

/** The EchoMqError `fn` throws (fails the test if it throws anything else, or nothing). */
function errorOf(fn: () => unknown): EchoMqError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EchoMqError);
    return err as EchoMqError;
  }
  throw new Error('expected a throw');
}

/** Whether anything reachable from a fresh object was polluted. */
const polluted = (): unknown => (({}) as Record<string, unknown>).polluted;

describe('encodePayload: values JSON cannot carry', () => {
  const circular: Record<string, unknown> = { a: 1 };
  circular.self = circular;
  const deep: unknown[] = [];
  deep.push({ inner: deep });

  const refused: [string, unknown][] = [
    ['undefined', undefined],
    ['a function', () => 1],
    ['a class', class X {}],
    ['a symbol', Symbol('s')],
    ['a BigInt', 10n],
    ['a nested BigInt', { amount: 10n }],
    ['a circular object', circular],
    ['a circular array', deep],
  ];

  it.each(refused)('refuses %s with EMQ_BAD_PAYLOAD', (_what, value) => {
    const err = errorOf(() => encodePayload(value));
    expect(err).toBeInstanceOf(InvalidPayloadError);
    expect(err.code).toBe('EMQ_BAD_PAYLOAD');
  });

  it('accepts every JSON value and encodes it as JSON text', () => {
    const values = [null, 0, -1.5, true, false, '', 'text', [], {}, [1, 'a', null], { a: { b: [1, { c: 'd' }] } }];
    for (const v of values) {
      const text = encodePayload(v);
      expect(text).toBe(JSON.stringify(v));
      expect(decodePayload(text)).toEqual(v);
    }
  });
});

describe('encodePayload: the size limit', () => {
  it('counts UTF-8 bytes, not UTF-16 units: 3-byte characters', () => {
    // JSON text of '€€€' is `"€€€"`: 5 UTF-16 units, 11 UTF-8 bytes
    const err = errorOf(() => encodePayload('€€€', 10));
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect(err.code).toBe('EMQ_PAYLOAD_TOO_LARGE');
    expect(err.message).toContain('11 bytes');
    expect(err.message).toContain('10');
    expect(encodePayload('€€€', 11)).toBe('"€€€"');
  });

  it('counts UTF-8 bytes: 4-byte characters (surrogate pairs)', () => {
    // `"😀😀"`: 6 UTF-16 units, 10 UTF-8 bytes
    expect(errorOf(() => encodePayload('😀😀', 9)).code).toBe('EMQ_PAYLOAD_TOO_LARGE');
    expect(encodePayload('😀😀', 10)).toBe('"😀😀"');
  });

  it('counts UTF-8 bytes inside objects', () => {
    const value = { name: 'é'.repeat(100) }; // {"name":"…"} = 11 + 200 bytes, 111 units
    const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
    expect(bytes).toBe(211);
    expect(errorOf(() => encodePayload(value, 210)).code).toBe('EMQ_PAYLOAD_TOO_LARGE');
    expect(errorOf(() => encodePayload(value, 150)).code).toBe('EMQ_PAYLOAD_TOO_LARGE');
    expect(encodePayload(value, 211)).toHaveLength(111);
  });

  it('is exact at the boundary for ASCII', () => {
    const value = 'a'.repeat(98); // 100 bytes of JSON
    expect(encodePayload(value, 100)).toHaveLength(100);
    expect(errorOf(() => encodePayload(value, 99)).code).toBe('EMQ_PAYLOAD_TOO_LARGE');
  });

  it('defaults to 512 KiB', () => {
    expect(DEFAULT_MAX_PAYLOAD_BYTES).toBe(512 * 1024);
    const fits = 'a'.repeat(DEFAULT_MAX_PAYLOAD_BYTES - 2);
    expect(encodePayload(fits)).toHaveLength(DEFAULT_MAX_PAYLOAD_BYTES);
    expect(errorOf(() => encodePayload(fits + 'a')).code).toBe('EMQ_PAYLOAD_TOO_LARGE');
    // multi-byte: under the limit in UTF-16 units, over it in bytes
    const wide = '€'.repeat(DEFAULT_MAX_PAYLOAD_BYTES / 2);
    expect(errorOf(() => encodePayload(wide)).code).toBe('EMQ_PAYLOAD_TOO_LARGE');
  });
});

describe('decodePayload: prototype pollution', () => {
  afterEach(() => {
    // never let a failure here leak into other tests
    delete (Object.prototype as Record<string, unknown>).polluted;
  });

  it('returns undefined for empty, null and undefined text', () => {
    expect(decodePayload('')).toBeUndefined();
    expect(decodePayload(null)).toBeUndefined();
    expect(decodePayload(undefined)).toBeUndefined();
  });

  it('drops a top-level __proto__ key, so Object.assign cannot swap the prototype', () => {
    const decoded = decodePayload<Record<string, unknown>>('{"__proto__":{"polluted":true},"ok":1}');
    expect(decoded).toEqual({ ok: 1 });
    expect(Object.prototype.hasOwnProperty.call(decoded, '__proto__')).toBe(false);
    const target = Object.assign({}, decoded);
    expect(Object.getPrototypeOf(target)).toBe(Object.prototype);
    expect((target as Record<string, unknown>).polluted).toBeUndefined();
    expect(polluted()).toBeUndefined();
  });

  it('drops nested __proto__ keys, in objects and in arrays', () => {
    const decoded = decodePayload<{ a: Record<string, unknown>; list: Record<string, unknown>[] }>(
      '{"a":{"__proto__":{"polluted":1},"b":2},"list":[{"__proto__":{"polluted":1}}]}',
    );
    expect(decoded).toEqual({ a: { b: 2 }, list: [{}] });
    expect(Object.getPrototypeOf(Object.assign({}, decoded!.a))).toBe(Object.prototype);
    expect(Object.getPrototypeOf(Object.assign({}, decoded!.list[0]))).toBe(Object.prototype);
    expect(polluted()).toBeUndefined();
  });

  it('drops a __proto__ key spelt with whitespace around the colon', () => {
    const decoded = decodePayload<Record<string, unknown>>('{ "__proto__" : { "polluted" : true } }');
    expect(Object.getPrototypeOf(Object.assign({}, decoded))).toBe(Object.prototype);
    expect(polluted()).toBeUndefined();
  });

  it('drops a __proto__ key spelt with JSON unicode escapes (JSON.parse decodes it to __proto__)', () => {
    for (const text of ['{"\\u005f_proto__":{"polluted":true}}', '{"__pr\\u006fto__":{"polluted":true}}']) {
      const decoded = decodePayload<Record<string, unknown>>(text);
      const target = Object.assign({}, decoded);
      expect((target as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.getPrototypeOf(target)).toBe(Object.prototype);
      expect(Object.prototype.hasOwnProperty.call(decoded, '__proto__')).toBe(false);
      expect(polluted()).toBeUndefined();
    }
  });

  it('keeps ordinary keys that merely contain the word', () => {
    expect(decodePayload('{"__proto__x":1,"x__proto__":2,"s":"__proto__"}')).toEqual({
      __proto__x: 1,
      x__proto__: 2,
      s: '__proto__',
    });
  });
});
