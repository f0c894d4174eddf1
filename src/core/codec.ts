import { InvalidPayloadError, PayloadTooLargeError } from './errors.js';

/** Default payload limit: 512 KiB of JSON. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 512 * 1024;

/** A value that survives a JSON round trip. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/**
 * Encodes `value` as JSON, refusing what JSON cannot carry (undefined, functions, symbols,
 * BigInt, cycles) and anything over `maxBytes`.
 */
export function encodePayload(value: unknown, maxBytes = DEFAULT_MAX_PAYLOAD_BYTES): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new InvalidPayloadError(`payload is not JSON-serialisable: ${(err as Error).message}`);
  }
  if (text === undefined) throw new InvalidPayloadError(`payload of type ${typeof value} is not JSON`);
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
