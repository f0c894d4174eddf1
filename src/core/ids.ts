import { InvalidIdError, InvalidNameError } from './errors.js';

/** The 62 digits in ASCII order, so byte order of encoded ids equals numeric order. */
export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** The snowflake epoch: 2025-01-01T00:00:00Z. */
export const ID_EPOCH_MS = 1735689600000;
/** Bits of the per-millisecond sequence. */
export const SEQ_BITS = 12;
/** Bits of the node number (0..1023). */
export const NODE_BITS = 10;
/** Largest node number. */
export const MAX_NODE = (1 << NODE_BITS) - 1;
const MAX_SEQ = (1 << SEQ_BITS) - 1;
/** Length of the base62 body. */
export const BODY_LENGTH = 11;
/** Length of a whole branded id. */
export const ID_LENGTH = 14;

const ID_RE = /^[a-z]{3}[0-9A-Za-z]{11}$/;
const NS_RE = /^[a-z]{3}$/;
const DIGIT = new Map<string, bigint>([...BASE62].map((c, i) => [c, BigInt(i)]));
const MAX_U64 = (1n << 64n) - 1n;

/** The parts of a snowflake. */
export interface Snowflake {
  /** Milliseconds since the Unix epoch at mint. */
  readonly ms: number;
  readonly node: number;
  readonly seq: number;
}

/** Encodes a 64-bit unsigned value as 11 zero-padded base62 digits. */
export function encodeBody(value: bigint): string {
  if (value < 0n || value > MAX_U64) throw new InvalidIdError(`value out of 64-bit range`);
  const out = new Array<string>(BODY_LENGTH);
  let v = value;
  for (let i = BODY_LENGTH - 1; i >= 0; i--) {
    out[i] = BASE62[Number(v % 62n)];
    v /= 62n;
  }
  return out.join('');
}

/** Decodes an 11-digit base62 body back to its 64-bit value. */
export function decodeBody(body: string): bigint {
  let v = 0n;
  for (const c of body) {
    const d = DIGIT.get(c);
    if (d === undefined) throw new InvalidIdError(`bad base62 digit ${JSON.stringify(c)}`);
    v = v * 62n + d;
  }
  if (v > MAX_U64) throw new InvalidIdError('id body exceeds 64 bits');
  return v;
}

/** True when `id` is a well-formed branded id (optionally of the given namespace). */
export function isBrandedId(id: unknown, ns?: string): id is string {
  if (typeof id !== 'string' || !ID_RE.test(id)) return false;
  if (ns !== undefined && !id.startsWith(ns)) return false;
  try {
    decodeBody(id.slice(3));
    return true;
  } catch {
    return false;
  }
}

/** Throws `InvalidIdError` unless `id` is a branded id of namespace `ns`. */
export function assertBrandedId(id: unknown, ns: string): asserts id is string {
  if (!isBrandedId(id, ns)) {
    const shown = typeof id === 'string' ? JSON.stringify(id.slice(0, 40)) : typeof id;
    throw new InvalidIdError(`${shown} is not a 14-byte branded id of namespace "${ns}"`);
  }
}

/** Splits a branded id into namespace and snowflake parts. */
export function parseId(id: string): { ns: string } & Snowflake {
  if (!isBrandedId(id)) throw new InvalidIdError(`${JSON.stringify(id)} is not a branded id`);
  const v = decodeBody(id.slice(3));
  return {
    ns: id.slice(0, 3),
    ms: Number(v >> BigInt(NODE_BITS + SEQ_BITS)) + ID_EPOCH_MS,
    node: Number((v >> BigInt(SEQ_BITS)) & BigInt(MAX_NODE)),
    seq: Number(v & BigInt(MAX_SEQ)),
  };
}

/** Builds the id of the given parts (used for range bounds: the smallest id of an instant). */
export function composeId(ns: string, parts: Snowflake): string {
  if (!NS_RE.test(ns)) throw new InvalidNameError(`namespace must be 3 lowercase letters`);
  const check = (v: number, hi: number, what: string): void => {
    if (!Number.isInteger(v) || v < 0 || v > hi) throw new InvalidIdError(`${what} must be an integer in 0..${hi}, got ${v}`);
  };
  const rel = parts.ms - ID_EPOCH_MS;
  check(rel, 2 ** 42 - 1, 'milliseconds since the id epoch');
  check(parts.node, MAX_NODE, 'node');
  check(parts.seq, MAX_SEQ, 'sequence');
  return ns + encodeParts(rel, parts.node * (MAX_SEQ + 1) + parts.seq);
}

const LOW = 2 ** (NODE_BITS + SEQ_BITS);
/**
 * Base62 of `hi · 2^22 + lo` in plain doubles (no BigInt: minting is on every enqueue's path,
 * branding on every Bus event a group member handles). A long division by 62^5 splits the value
 * into two 5-digit parts and a top digit (three `%` on doubles, every intermediate below 2^53);
 * the parts' digits then come from small-integer arithmetic (a `%` on a double is a call, and
 * the digit-by-digit form took 22 of them: about 4× slower, measured). Unchecked: `hi` must be
 * an integer in 0..2^42 − 1 and `lo` in 0..2^22 − 1 (`composeId` checks; so does `eventIdOf`).
 */
export function encodeParts(hi: number, lo: number): string {
  // hi · 2^22 + lo = (q1 · 2^22 + q2) · 62^5 + low, then q1 · 2^22 + q2 = top · 62^5 + mid.
  const r1 = hi % P5;
  const q1 = (hi - r1) / P5;
  const x = r1 * LOW + lo;
  const low = x % P5;
  const q = q1 * LOW + (x - low) / P5;
  const mid = q % P5;
  const top = (q - mid) / P5;
  const d = DIGITS;
  d[0] = CODES[top];
  put5(d, 1, mid);
  put5(d, 6, low);
  return String.fromCharCode(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10]);
}

/** Writes the five base62 digits of `v` (0 ≤ v < 62^5) as char codes into `d[at .. at + 4]`, most significant first. */
function put5(d: number[], at: number, v: number): void {
  for (let i = at + 4; i > at; i--) {
    const q = (v / 62) | 0;
    d[i] = CODES[v - q * 62];
    v = q;
  }
  d[at] = CODES[v];
}

/** The char codes of one id's 11 digits, reused by `encodeParts` (ids are minted synchronously). */
const DIGITS: number[] = new Array<number>(11).fill(0);

/** 62^5: five base62 digits, below 2^30. */
const P5 = 62 ** 5;

/** The char code of each base62 digit. */
const CODES = Uint8Array.from(BASE62, (ch) => ch.charCodeAt(0));

/**
 * Mints branded snowflakes. Monotonic per instance: a clock that steps back never makes an id
 * smaller, and a full sequence borrows the next millisecond.
 */
export class IdMinter {
  private lastMs = 0;
  private seq = -1;

  constructor(
    private nodeNumber: number,
    private readonly clock: () => number = Date.now,
  ) {
    this.rebind(nodeNumber);
  }

  /** The node number in the ids minted now. */
  get node(): number {
    return this.nodeNumber;
  }

  /** Switches to another node number (after a lost node lease); order is kept. */
  rebind(node: number): void {
    if (!Number.isInteger(node) || node < 0 || node > MAX_NODE) {
      throw new InvalidIdError(`node number must be an integer in 0..${MAX_NODE}`);
    }
    this.nodeNumber = node;
    // Move past the current millisecond so ids minted under the new number still sort after.
    this.lastMs = Math.max(this.lastMs, this.clock()) + 1;
    this.seq = -1;
  }

  /** Mints the next id of namespace `ns` (3 lowercase letters). */
  next(ns: string): string {
    const now = this.clock();
    if (now > this.lastMs) {
      this.lastMs = now;
      this.seq = 0;
    } else if (++this.seq > MAX_SEQ) {
      this.lastMs += 1;
      this.seq = 0;
    }
    return composeId(ns, { ms: this.lastMs, node: this.nodeNumber, seq: this.seq });
  }
}
