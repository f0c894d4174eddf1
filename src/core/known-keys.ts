import { InvalidOptionError } from './errors.js';

/**
 * Refuses an options value that is not a plain object, or that has keys outside `known` (a typo
 * would otherwise silently get a default): throws `InvalidOptionError` (EMQ_BAD_OPTION) naming
 * the unknown keys and the known ones. `undefined` passes (no options given).
 */
export function refuseUnknownKeys(o: unknown, known: ReadonlySet<string>, what: string): void {
  if (o === undefined) return;
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new InvalidOptionError(`${what} must be an object`);
  const unknown = Object.keys(o).filter((k) => !known.has(k));
  if (unknown.length > 0) throw new InvalidOptionError(`unknown ${what}: ${unknown.join(', ')} (known: ${[...known].join(', ')})`);
}

/**
 * Refuses the keys of `o` that `renamed` maps to their new name (an option renamed in a breaking
 * release): throws `InvalidOptionError` (EMQ_BAD_OPTION) naming the old key and the new one, e.g.
 * `unknown option "groups" (renamed to "lanes") in queue options`, so an old key is never a
 * silently ignored one. Anything but a plain object passes (the caller's own checks refuse it).
 */
export function refuseRenamedKeys(o: unknown, renamed: Readonly<Record<string, string>>, what: string): void {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return;
  for (const k of Object.keys(o)) {
    if (Object.hasOwn(renamed, k)) throw new InvalidOptionError(`unknown option "${k}" (renamed to "${renamed[k]}") in ${what}`);
  }
}

/**
 * The key set of an options interface `T`, from a record naming each key: a key added to `T`
 * and not here (or named here and not in `T`) fails to compile, so the set cannot drift.
 */
export const keySet = <T>(keys: { readonly [K in keyof Required<T>]: true }): ReadonlySet<string> => new Set(Object.keys(keys));

/** An integer option in `lo..hi`, else `InvalidOptionError` naming it (`what`) and the value given. */
export const intIn = (v: unknown, lo: number, hi: number, what: string): number => {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) {
    throw new InvalidOptionError(`${what} must be an integer in ${lo}..${hi}, got ${String(v)}`);
  }
  return v;
};
