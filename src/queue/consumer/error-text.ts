/**
 * The text stored as a job's error (`JobView.error`) for whatever its handler threw: an `Error`
 * as `<name>: <message>`; a string as itself; an object or array as JSON (`{"code":42}`; a cycle
 * is written `"[Circular]"`, a bigint as its digits); anything else through `String()`. Never
 * `[object Object]`.
 */
export function errorText(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  if (typeof err === 'string') return err;
  if (typeof err === 'object' && err !== null) {
    const json = safeJson(err);
    if (json !== undefined) return json;
    return err.constructor?.name ?? 'Object';
  }
  return String(err);
}

/** JSON of `value`, with a reference to an enclosing object written `"[Circular]"`; undefined when it cannot be written. */
function safeJson(value: object): string | undefined {
  const ancestors: unknown[] = [];
  try {
    return JSON.stringify(value, function (this: unknown, _key: string, v: unknown) {
      if (typeof v === 'bigint') return v.toString();
      if (typeof v !== 'object' || v === null) return v;
      // `this` is the object holding `v`: drop the ancestors that are not on its path.
      while (ancestors.length > 0 && ancestors[ancestors.length - 1] !== this) ancestors.pop();
      if (ancestors.includes(v)) return '[Circular]';
      ancestors.push(v);
      return v;
    });
  } catch {
    return undefined; // a toJSON that threw
  }
}
