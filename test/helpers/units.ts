import { EchoMqError } from '../../src/core/errors.js';

/** The code of the EchoMqError `fn` throws (fails the test if it throws anything else, or nothing). */
export function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(EchoMqError);
    return (err as EchoMqError).code;
  }
  throw new Error('expected a throw');
}

/** mulberry32: a small seeded PRNG, so property tests are reproducible. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** A seeded PRNG of floats in [0, 1). */
export function prngUnit(seed: number): () => number {
  const next = prng(seed);
  return () => next() / 4294967296;
}
