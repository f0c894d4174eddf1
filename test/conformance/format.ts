/**
 * The conformance scenario format (conformance/README.md): types and a strict validator. Every
 * object is checked for unknown keys, so a typo in a scenario file fails loudly instead of
 * passing silently.
 */

/** A reply matcher or a key-state value matcher (README "Reply matchers"). */
export type Matcher = number | string | null | Matcher[] | MatcherObject;

/** The special matcher object: `$any`, `$type`, `$match`, `$int`, `$bind`, `$len`, `$prefix`. */
export interface MatcherObject {
  $any?: true;
  $type?: 'integer' | 'string' | 'array' | 'nil';
  $match?: string;
  $int?: [number, number];
  $bind?: string;
  $len?: number;
  $prefix?: Matcher[];
}

/** A key state expectation (README "Key state expectations"). */
export interface KeyState {
  type: 'none' | 'string' | 'list' | 'set' | 'zset' | 'hash' | 'stream';
  value?: Matcher;
  members?: Matcher[];
  scored?: [Matcher, Matcher][];
  fields?: Record<string, Matcher>;
  exact?: Record<string, Matcher>;
  length?: number;
  len?: number;
  ttl?: [number, number];
}

/** One step of a scenario. */
export type Step =
  | { call: string; keys: string[]; argv: (string | number)[]; expect?: Matcher; error?: string; note?: string }
  | { command: (string | number)[]; expect?: Matcher; error?: string; note?: string }
  | { sleep: number; note?: string }
  | { keys_state: Record<string, KeyState>; note?: string }
  | { snapshot: string; note?: string }
  | { unchanged: string; note?: string }
  | { repeat: number; steps: Step[]; note?: string };

/** One scenario: a name and its steps. */
export interface Scenario {
  name: string;
  steps: Step[];
  note?: string;
}

/** A scenario file. */
export interface ScenarioFile {
  about: string;
  scenarios: unknown[];
}

/** A scenario or file that breaks the format. */
export class ScenarioFormatError extends Error {
  override name = 'ScenarioFormatError';
}

const fail = (where: string, why: string): never => {
  throw new ScenarioFormatError(`${where}: ${why}`);
};
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function onlyKeys(o: Record<string, unknown>, allowed: readonly string[], where: string): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) fail(where, `unknown key "${k}" (allowed: ${allowed.join(', ')})`);
}

function intPair(v: unknown, where: string): void {
  if (!Array.isArray(v) || v.length !== 2 || !isInt(v[0]) || !isInt(v[1]) || v[0] > v[1]) {
    fail(where, `expected [min, max] with integers min <= max, got ${JSON.stringify(v)}`);
  }
}

/** Checks a matcher (README "Reply matchers"). */
export function checkMatcher(m: unknown, where: string): void {
  if (m === null || typeof m === 'string') return;
  if (typeof m === 'number') {
    if (!isInt(m)) fail(where, `${m} is not a safe integer (use {"$match": …} on a string or {"$int": [min, max]})`);
    return;
  }
  if (Array.isArray(m)) return m.forEach((x, i) => checkMatcher(x, `${where}[${i}]`));
  if (!isObj(m)) return fail(where, `${JSON.stringify(m)} is not a matcher (booleans are not replies)`);
  const keys = Object.keys(m);
  if (keys.length === 0) fail(where, 'an empty object is not a matcher (use {"$any": true})');
  onlyKeys(m, ['$any', '$type', '$match', '$int', '$bind', '$len', '$prefix'], where);
  if ('$any' in m && m.$any !== true) fail(where, '"$any" must be true');
  if ('$type' in m && !['integer', 'string', 'array', 'nil'].includes(m.$type as string)) {
    fail(where, `"$type" must be integer, string, array or nil, got ${JSON.stringify(m.$type)}`);
  }
  if ('$match' in m) {
    if (typeof m.$match !== 'string') fail(where, '"$match" must be a string');
    try {
      new RegExp(m.$match as string, 'u');
    } catch (e) {
      fail(where, `"$match" is not a valid regex: ${(e as Error).message}`);
    }
  }
  if ('$int' in m) intPair(m.$int, `${where}.$int`);
  if ('$bind' in m && (typeof m.$bind !== 'string' || !NAME.test(m.$bind))) fail(where, `"$bind" must be a name ${NAME}`);
  if ('$len' in m && (!isInt(m.$len) || m.$len < 0)) fail(where, '"$len" must be an integer >= 0');
  if ('$prefix' in m) {
    if (!Array.isArray(m.$prefix)) fail(where, '"$prefix" must be an array of matchers');
    (m.$prefix as unknown[]).forEach((x, i) => checkMatcher(x, `${where}.$prefix[${i}]`));
  }
}

const STATE_KEYS: Record<KeyState['type'], readonly string[]> = {
  none: ['type'],
  string: ['type', 'value', 'ttl'],
  list: ['type', 'value', 'len', 'ttl'],
  set: ['type', 'members', 'len', 'ttl'],
  zset: ['type', 'members', 'scored', 'len', 'ttl'],
  hash: ['type', 'fields', 'exact', 'len', 'ttl'],
  stream: ['type', 'length', 'len', 'ttl'],
};

function checkFields(v: unknown, where: string, allowNull: boolean): void {
  if (!isObj(v)) return fail(where, 'expected an object of field -> matcher');
  for (const [f, m] of Object.entries(v)) {
    if (m === null && !allowNull) fail(`${where}.${f}`, 'null (absent) is not allowed in "exact"; leave the field out');
    checkMatcher(m, `${where}.${f}`);
  }
}

function matcherList(v: unknown, where: string): void {
  if (!Array.isArray(v)) fail(where, 'expected an array of matchers');
  (v as unknown[]).forEach((x, i) => checkMatcher(x, `${where}[${i}]`));
}

/** Checks a key state expectation (README "Key state expectations"). */
export function checkKeyState(s: unknown, where: string): void {
  if (!isObj(s)) return fail(where, 'a key state must be an object with "type"');
  const allowed = STATE_KEYS[s.type as KeyState['type']];
  if (!allowed) return fail(where, `unknown key type ${JSON.stringify(s.type)} (none, string, list, set, zset, hash, stream)`);
  onlyKeys(s, allowed, where);
  if ('value' in s) (s.type === 'list' ? matcherList : checkMatcher)(s.value, `${where}.value`);
  if ('members' in s) matcherList(s.members, `${where}.members`);
  if ('scored' in s) {
    if (!Array.isArray(s.scored)) fail(`${where}.scored`, 'expected an array of [member, score] pairs');
    (s.scored as unknown[]).forEach((p, i) => {
      if (!Array.isArray(p) || p.length !== 2) fail(`${where}.scored[${i}]`, 'expected [member, score]');
      matcherList(p, `${where}.scored[${i}]`);
    });
  }
  if ('members' in s && 'scored' in s) fail(where, 'give "members" or "scored", not both');
  if ('fields' in s) checkFields(s.fields, `${where}.fields`, true);
  if ('exact' in s) checkFields(s.exact, `${where}.exact`, false);
  if ('fields' in s && 'exact' in s) fail(where, 'give "fields" or "exact", not both');
  for (const k of ['len', 'length'] as const) if (k in s && (!isInt(s[k]) || (s[k] as number) < 0)) fail(`${where}.${k}`, 'must be an integer >= 0');
  if ('ttl' in s) intPair(s.ttl, `${where}.ttl`);
}

const strList = (v: unknown, where: string, ints: boolean): void => {
  if (!Array.isArray(v)) return fail(where, 'expected an array');
  v.forEach((x, i) => {
    if (typeof x === 'string') return;
    if (ints && isInt(x)) return;
    fail(`${where}[${i}]`, `${JSON.stringify(x)} must be a string${ints ? ' or a safe integer' : ''}`);
  });
};

function checkReplyExpectation(s: Record<string, unknown>, where: string, scriptCall: boolean): void {
  if ('expect' in s) checkMatcher(s.expect, `${where}.expect`);
  if ('error' in s) {
    if (typeof s.error !== 'string' || s.error === '') fail(`${where}.error`, 'must be a non-empty string');
    if (scriptCall && !/^EMQ_[A-Z_]+$/.test(s.error as string)) fail(`${where}.error`, `a script's error must be an EMQ_<CODE>, got ${JSON.stringify(s.error)}`);
  }
  if ('expect' in s && 'error' in s) fail(where, 'give "expect" or "error", not both');
}

/** Checks one step; `scripts` are the names of the files in lua/. */
export function checkStep(s: unknown, where: string, scripts: ReadonlySet<string>): void {
  if (!isObj(s)) return fail(where, 'a step must be an object');
  const kinds = ['call', 'command', 'sleep', 'keys_state', 'snapshot', 'unchanged', 'repeat'].filter((k) => k in s);
  if (kinds.length !== 1) return fail(where, `a step has exactly one of call, command, sleep, keys_state, snapshot, unchanged, repeat (found: ${kinds.join(', ') || 'none'}; keys: ${Object.keys(s).join(', ')})`);
  const kind = kinds[0];
  const w = `${where} (${kind})`;
  switch (kind) {
    case 'call':
      onlyKeys(s, ['call', 'keys', 'argv', 'expect', 'error', 'note'], w);
      if (typeof s.call !== 'string' || !scripts.has(s.call)) fail(w, `no script lua/${String(s.call)}.lua`);
      strList(s.keys ?? [], `${w}.keys`, false);
      strList(s.argv ?? [], `${w}.argv`, true);
      return checkReplyExpectation(s, w, true);
    case 'command':
      onlyKeys(s, ['command', 'expect', 'error', 'note'], w);
      strList(s.command, `${w}.command`, true);
      if ((s.command as unknown[]).length === 0) fail(w, 'empty command');
      return checkReplyExpectation(s, w, false);
    case 'sleep':
      onlyKeys(s, ['sleep', 'note'], w);
      if (!isInt(s.sleep) || s.sleep < 0 || s.sleep > 60000) fail(w, 'sleep must be 0..60000 ms');
      return;
    case 'keys_state':
      onlyKeys(s, ['keys_state', 'note'], w);
      if (!isObj(s.keys_state) || Object.keys(s.keys_state).length === 0) fail(w, 'expected an object of key ref -> state');
      for (const [k, st] of Object.entries(s.keys_state as object)) checkKeyState(st, `${w}[${k}]`);
      return;
    case 'snapshot':
    case 'unchanged':
      onlyKeys(s, [kind, 'note'], w);
      if (typeof s[kind] !== 'string' || s[kind] === '') fail(w, 'expected a snapshot name');
      return;
    default:
      onlyKeys(s, ['repeat', 'steps', 'note'], w);
      if (!isInt(s.repeat) || s.repeat < 1 || s.repeat > 10000) fail(w, 'repeat must be 1..10000');
      if (!Array.isArray(s.steps) || s.steps.length === 0) fail(w, 'repeat needs a non-empty "steps" array');
      (s.steps as unknown[]).forEach((x, i) => checkStep(x, `${where}.${i}`, scripts));
  }
}

/** Checks one scenario and returns it typed. */
export function checkScenario(s: unknown, where: string, scripts: ReadonlySet<string>): Scenario {
  if (!isObj(s)) return fail(where, 'a scenario must be an object');
  onlyKeys(s, ['name', 'steps', 'note'], where);
  if (typeof s.name !== 'string' || s.name.trim() === '') fail(where, 'a scenario needs a "name"');
  if (!Array.isArray(s.steps) || s.steps.length === 0) fail(where, 'a scenario needs a non-empty "steps" array');
  (s.steps as unknown[]).forEach((x, i) => checkStep(x, `step ${i}`, scripts));
  return s as unknown as Scenario;
}

/** Checks the file's outer shape (the scenarios are checked one by one). */
export function checkFile(f: unknown, where: string): ScenarioFile {
  if (!isObj(f)) return fail(where, 'a scenario file is one JSON object');
  onlyKeys(f, ['about', 'scenarios'], where);
  if (typeof f.about !== 'string') fail(where, 'a file needs an "about" string');
  if (!Array.isArray(f.scenarios) || f.scenarios.length === 0) fail(where, 'a file needs a non-empty "scenarios" array');
  return f as unknown as ScenarioFile;
}
