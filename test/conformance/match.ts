/**
 * Structural matching of replies and stored values (conformance/README.md "Reply matchers").
 * A reply is what iovalkey's `call` returns: integers as numbers, bulk and status strings as
 * strings, nil as null, arrays as arrays. Stored values (key states) are always strings, so there
 * an integer matcher matches the decimal text of that integer.
 */
import type { Matcher, MatcherObject } from './format.js';
import type { Scope } from './rewrite.js';

/** A decoded reply. */
export type Reply = number | string | null | Reply[];

/** A matcher that did not match: `path` says where inside the reply. */
export class Mismatch extends Error {
  override name = 'Mismatch';
  constructor(
    readonly path: string,
    readonly expected: unknown,
    readonly actual: unknown,
    why?: string,
  ) {
    super(`at ${path || '(reply)'}: ${why ?? 'mismatch'}; expected ${show(expected)}, actual ${show(actual)}`);
  }
}

/** Short printable form of a value. */
export function show(v: unknown): string {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 400 ? `${s.slice(0, 400)}… (${s.length} chars)` : s;
}

const DECIMAL = /^-?(0|[1-9][0-9]*)$/;

function typeOf(a: Reply, stored: boolean): 'integer' | 'string' | 'array' | 'nil' {
  if (a === null) return 'nil';
  if (Array.isArray(a)) return 'array';
  if (typeof a === 'number') return 'integer';
  return stored && DECIMAL.test(a) ? 'integer' : 'string';
}

/** The integer value of a reply, or undefined (stored: a decimal string counts). */
function intOf(a: Reply, stored: boolean): number | undefined {
  if (typeof a === 'number') return a;
  if (stored && typeof a === 'string' && DECIMAL.test(a) && Number.isSafeInteger(Number(a))) return Number(a);
  return undefined;
}

/**
 * Matches `actual` against `m`, binding `$bind` names in `scope`; throws `Mismatch`.
 * `stored` is true for values read from keys (strings only).
 */
export function match(m: Matcher, actual: Reply, scope: Scope, path = '', stored = false): void {
  if (m === null) {
    if (actual !== null) throw new Mismatch(path, null, actual);
    return;
  }
  if (typeof m === 'number') {
    if (intOf(actual, stored) !== m) throw new Mismatch(path, m, actual, stored ? 'not this integer' : 'not this integer reply');
    return;
  }
  if (typeof m === 'string') {
    const want = scope.text(m);
    if (actual !== want) throw new Mismatch(path, want, actual, typeof actual === 'string' ? 'different bytes' : 'not a string reply');
    return;
  }
  if (Array.isArray(m)) {
    if (!Array.isArray(actual)) throw new Mismatch(path, m, actual, 'not an array reply');
    if (actual.length !== m.length) throw new Mismatch(path, m, actual, `array of ${actual.length}, expected ${m.length}`);
    m.forEach((x, i) => match(x, actual[i], scope, `${path}[${i}]`, stored));
    return;
  }
  matchObject(m, actual, scope, path, stored);
}

function matchObject(m: MatcherObject, actual: Reply, scope: Scope, path: string, stored: boolean): void {
  if (m.$type !== undefined && typeOf(actual, stored) !== m.$type) {
    throw new Mismatch(path, m, actual, `type ${typeOf(actual, stored)}, expected ${m.$type}`);
  }
  if (m.$match !== undefined) {
    if (typeof actual !== 'string') throw new Mismatch(path, m, actual, 'not a string');
    const re = scope.regex(m.$match);
    if (!re.test(actual)) throw new Mismatch(path, re.source, actual, 'does not match the regex');
  }
  if (m.$int !== undefined) {
    const v = intOf(actual, stored);
    const [lo, hi] = m.$int;
    if (v === undefined || v < lo || v > hi) throw new Mismatch(path, m, actual, `not an integer in [${lo}, ${hi}]`);
  }
  if (m.$len !== undefined) {
    if (!Array.isArray(actual) || actual.length !== m.$len) throw new Mismatch(path, m, actual, `not an array of length ${m.$len}`);
  }
  if (m.$prefix !== undefined) {
    if (!Array.isArray(actual) || actual.length < m.$prefix.length) {
      throw new Mismatch(path, m, actual, `not an array of at least ${m.$prefix.length} elements`);
    }
    m.$prefix.forEach((x, i) => match(x, actual[i], scope, `${path}[${i}]`, stored));
  }
  if (m.$bind !== undefined) {
    if (typeof actual === 'number') scope.bind(m.$bind, String(actual));
    else if (typeof actual === 'string') scope.bind(m.$bind, actual);
    else throw new Mismatch(path, m, actual, '"$bind" takes a string or an integer');
  }
}

/**
 * Matches an unordered collection: every element of `actual` is matched by exactly one matcher
 * (a perfect assignment, found by backtracking; collections in scenarios are small).
 */
export function matchUnordered(ms: Matcher[], actual: string[], scope: Scope, path: string): void {
  if (ms.length !== actual.length) {
    throw new Mismatch(path, ms, actual, `${actual.length} members, expected ${ms.length}`);
  }
  const used = new Array<boolean>(actual.length).fill(false);
  const pick = new Array<number>(ms.length).fill(-1);
  const fits = (m: Matcher, a: string): boolean => {
    try {
      match(m, a, scope, path, true);
      return true;
    } catch (e) {
      if (e instanceof Mismatch) return false;
      throw e;
    }
  };
  const assign = (i: number): boolean => {
    if (i === ms.length) return true;
    for (let j = 0; j < actual.length; j++) {
      if (used[j] || !fits(ms[i], actual[j])) continue;
      used[j] = true;
      pick[i] = j;
      if (assign(i + 1)) return true;
      used[j] = false;
    }
    return false;
  };
  if (!assign(0)) throw new Mismatch(path, ms, [...actual].sort(), 'no one-to-one match of the members');
  // Bind for real, in matcher order, now that the assignment is known.
  ms.forEach((m, i) => match(m, actual[pick[i]], scope, path, true));
}
