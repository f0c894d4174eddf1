import { InvalidOptionError } from './errors.js';

/**
 * The one check of option keys, at every depth: an options object gets its known keys
 * (`keySet<T>`, exact at compile time), the name of the call it was given to (`what`, e.g.
 * `EchoMqModule options`) and its path under that call (`queues.orders`, `schedules[0].backoff`),
 * so a refusal names the full path of the unknown key: `unknown EchoMqModule options:
 * queues.orders.attemps (known: attempts, …)`. Keys another library would take (BullMQ's `jobId`)
 * carry a hint saying what EchoMQ offers instead.
 */

/** Where an options object sits: its path under the call it was given to, and hints for known foreign keys. */
export interface KeyPlace {
  /** The object's path under the call (`queues.orders`); empty for the call's own options. */
  readonly path?: string;
  /** Keys refused with a hint (`jobId` → `use key …`): what another library names them, and what to use here. */
  readonly hints?: Readonly<Record<string, string>>;
}

/** A path with one more step: `optionPath('queues', 'orders')` is `queues.orders`, a number gives `[i]`. */
export const optionPath = (path: string | undefined, key: string | number): string =>
  typeof key === 'number' ? `${path ?? ''}[${key}]` : path ? `${path}.${key}` : key;

/** `what` with a path under it, as messages name a value: `EchoMqModule options: queues.orders`. */
const placeOf = (what: string, path: string | undefined): string => (path ? `${what}: ${path}` : what);

/** Refuses anything but a plain object (not null, not an array) with `InvalidOptionError` naming its place. */
export function refuseNonObject(o: unknown, what: string, path?: string): asserts o is object {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new InvalidOptionError(`${placeOf(what, path)} must be an object`);
}

/**
 * Refuses an options value that is not a plain object, or that has keys outside `known` (a typo
 * would otherwise silently get a default): throws `InvalidOptionError` (EMQ_BAD_OPTION) naming
 * each unknown key by its full path (`at.path`), with its hint when `at.hints` has one, and the
 * known keys. `undefined` passes (no options given).
 */
export function refuseUnknownKeys(o: unknown, known: ReadonlySet<string>, what: string, at: KeyPlace = {}): void {
  if (o === undefined) return;
  refuseNonObject(o, what, at.path);
  const unknown = Object.keys(o).filter((k) => !known.has(k));
  if (unknown.length === 0) return;
  const named = unknown.map((k) => {
    const hint = at.hints && Object.hasOwn(at.hints, k) ? ` (${at.hints[k]})` : '';
    return optionPath(at.path, k) + hint;
  });
  throw new InvalidOptionError(`unknown ${what}: ${named.join(', ')} (known: ${[...known].join(', ')})`);
}

/**
 * Refuses the keys of `o` that `renamed` maps to their new name (an option renamed in a breaking
 * release): throws `InvalidOptionError` (EMQ_BAD_OPTION) naming the old key and the new one, e.g.
 * `unknown option "groups" (renamed to "lanes") in queue options`, so an old key is never a
 * silently ignored one. Anything but a plain object passes (the caller's own checks refuse it).
 */
export function refuseRenamedKeys(o: unknown, renamed: Readonly<Record<string, string>>, what: string, path?: string): void {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return;
  for (const k of Object.keys(o)) {
    if (Object.hasOwn(renamed, k)) throw new InvalidOptionError(`unknown option "${optionPath(path, k)}" (renamed to "${renamed[k]}") in ${what}`);
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

/** A finite number option in `lo..hi` (NaN and ±Infinity refused), else `InvalidOptionError` naming it. */
export const finiteIn = (v: unknown, lo: number, hi: number, what: string): number => {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi) {
    throw new InvalidOptionError(`${what} must be a finite number in ${lo}..${hi}, got ${String(v)}`);
  }
  return v;
};

/** A boolean option (or undefined), else `InvalidOptionError` naming it. */
export const boolOpt = (v: unknown, what: string): void => {
  if (v !== undefined && typeof v !== 'boolean') throw new InvalidOptionError(`${what} must be a boolean, got ${String(v)}`);
};
