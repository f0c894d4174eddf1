import { InvalidOptionError, InvalidPayloadError, PayloadTooLargeError } from './errors.js';

/** Default payload limit: 512 KiB of JSON. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 512 * 1024;

/** A value that survives a JSON round trip. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/**
 * How a payload (a job's, an event's, a cached value) is turned into JSON. `strict` (the default
 * of enqueue, publish and cache writes): a value JSON would silently change is refused with
 * `InvalidPayloadError` naming its path — a `Date` (it would read back as a string), `NaN` and
 * `±Infinity` (null), `undefined` or a function in an array (null), a `Map` or `Set` (`{}`), a
 * class instance without `toJSON` (a plain object: its prototype is lost), a `bigint`. `json`:
 * JSON's own conversions, as `JSON.stringify` makes them. See docs/queue.md, "Payloads".
 */
export type PayloadCodec = 'strict' | 'json';

/** Checks a `codec` option (`strict` or `json`; undefined gives `strict`), else `InvalidOptionError` naming it. */
export function resolveCodec(v: unknown, what = 'codec'): PayloadCodec {
  if (v === undefined) return 'strict';
  if (v !== 'strict' && v !== 'json') throw new InvalidOptionError(`${what} must be "strict" or "json", got ${JSON.stringify(v) ?? String(v)}`);
  return v;
}

const IDENT = /^[A-Za-z_$][\w$]*$/;
const step = (key: string | number): string => (typeof key === 'number' ? `[${key}]` : IDENT.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`);
const hasOwn = Object.prototype.hasOwnProperty;
const OBJECT_PROTO = Object.prototype;

const DATE = 'a Date becomes a string in JSON; pass date.toISOString() (or date.getTime())';

/** A value found: its path under the root (built only on the way back up from a refusal) and why. */
interface Found {
  path: string;
  readonly why: string;
}

/** Why JSON would change `v`, a value in an array (`inArray`) or an object; undefined when it would not. */
function changeOf(v: unknown, inArray: boolean): string | undefined {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(v) ? undefined : `${String(v)} becomes null in JSON; pass a finite number or null`;
    case 'undefined':
      // A key whose value is undefined is left out, and reads back as undefined: nothing changes.
      return inArray ? 'undefined in an array becomes null in JSON; pass null' : undefined;
    case 'bigint':
      return 'a bigint is not JSON; pass String(value) (or a number, when it fits)';
    case 'function':
    case 'symbol':
      return `a ${typeof v} is not data: JSON ${inArray ? 'turns it into null' : 'leaves it out'}`;
    default:
      return undefined; // objects are walked by the caller
  }
}

/** Walks `v` once (depth first); the first value JSON would change, or undefined. Plain objects and arrays only are entered. */
function walk(v: unknown, inArray: boolean, depth: number): Found | undefined {
  if (typeof v !== 'object') {
    const why = changeOf(v, inArray);
    return why === undefined ? undefined : { path: '', why };
  }
  if (v === null) return undefined;
  if (depth > 1000) return undefined; // JSON.stringify, which ran first, bounds what can be here
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const f = walk(v[i], true, depth + 1);
      if (f) return ((f.path = step(i) + f.path), f);
    }
    return undefined;
  }
  // A toJSON is the object's own say on its JSON form (Buffer, Decimal, …): trusted.
  if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return v instanceof Date ? { path: '', why: DATE } : undefined;
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== OBJECT_PROTO && proto !== null) {
    if (v instanceof Map) return { path: '', why: 'a Map becomes {} in JSON; pass Object.fromEntries(map) or [...map]' };
    if (v instanceof Set) return { path: '', why: 'a Set becomes {} in JSON; pass [...set]' };
    const name = (v as object).constructor?.name || 'a class';
    return { path: '', why: `an instance of ${name} becomes a plain object in JSON (its prototype and methods are lost); pass { ...value }, or give the class a toJSON()` };
  }
  for (const k in v) {
    if (!hasOwn.call(v, k)) continue;
    const f = walk((v as Record<string, unknown>)[k], false, depth + 1);
    if (f) return ((f.path = step(k) + f.path), f);
  }
  return undefined;
}

/**
 * Refuses, with `InvalidPayloadError` (EMQ_BAD_PAYLOAD), the first value in `value` that JSON
 * would silently change (see `PayloadCodec`), naming its path under `root`: `payload.items[2].at:
 * a Date becomes a string in JSON; …`. One pass over plain objects and arrays, allocating nothing
 * unless it refuses.
 */
export function refuseJsonChanges(value: unknown, root = 'payload'): void {
  const f = walk(value, false, 0);
  if (f) throw new InvalidPayloadError(`${root}${f.path}: ${f.why}, or set codec: 'json' to accept JSON's conversion (docs/queue.md, "Payloads")`);
}

/**
 * Encodes `value` as JSON, refusing what JSON cannot carry (undefined, functions, symbols,
 * BigInt, cycles) and anything over `maxBytes`; with `codec` `strict` also anything JSON would
 * silently change (`refuseJsonChanges`, naming its path under `root`).
 */
export function encodePayload(value: unknown, maxBytes = DEFAULT_MAX_PAYLOAD_BYTES, codec: PayloadCodec = 'json', root = 'payload'): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    // A bigint: the walk names its path (a cycle is left to JSON's own message: the walk would not end).
    if (codec === 'strict' && /BigInt/.test((err as Error).message)) refuseJsonChanges(value, root);
    throw new InvalidPayloadError(`payload is not JSON-serialisable: ${(err as Error).message}`);
  }
  if (text === undefined) throw new InvalidPayloadError(`payload of type ${typeof value} is not JSON`);
  if (codec === 'strict') refuseJsonChanges(value, root);
  // Byte length only matters near the limit; a string of n UTF-16 units has at most 3n bytes.
  if (text.length * 3 > maxBytes) {
    const size = Buffer.byteLength(text, 'utf8');
    if (size > maxBytes) throw new PayloadTooLargeError(size, maxBytes);
  }
  return text;
}

const dropProto = (key: string, value: unknown): unknown => (key === '__proto__' ? undefined : value);

/** Parses JSON read back from Valkey; `__proto__` keys are dropped so nothing is polluted. */
export function decodePayload<T = Json>(text: string | null | undefined): T | undefined {
  if (text === null || text === undefined || text === '') return undefined;
  // The reviver costs time, so only texts that could spell the key take it (a \u escape can).
  const risky = text.includes('__proto__') || text.includes('\\u');
  return (risky ? JSON.parse(text, dropProto) : JSON.parse(text)) as T;
}
