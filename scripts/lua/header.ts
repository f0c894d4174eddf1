/**
 * The machine-read part of a script source's header comment (`lua/src/<name>.lua`): the tags that
 * declare its keys, arguments, reply, errors, flags, modes, the fragments it uses and the scripts
 * it composes. The same lines stay in the built bytes as the script's documentation, and become
 * its entry in `lua/manifest.json`.
 *
 * Tags (each a comment line `-- @tag …`; a line `--` followed by three or more spaces continues
 * the tag above it):
 * - `@key <name>[?|*] <pattern> <about>`: a key, in KEYS order; `?` optional (trailing), `*` one
 *   per item of the call (e.g. a row per job).
 * - `@arg <name>[?|*] <spec> <about>`: an argument, in ARGV order (the first is `version`); specs:
 *   `version`, `<lo>..<hi>` (a decimal integer), `""|<lo>..<hi>`, `a|b` (one of the words),
 *   `bytes:<lo>..<hi>`, `id:<ns>`, `token`, or a word naming a text format.
 * - `@returns`, `@errors`: the reply and the refusals, as text.
 * - `@mode <name> <about>`: a named way to call the script (its keys and arguments in the text).
 * - `@flags <flag>[,<flag>]`: Valkey script flags (`allow-oom`, `no-writes`), put in the shebang.
 * - `@uses <fragment> …`: the `lua/lib/` fragments the body calls.
 * - `@compose <script> …`: the scripts whose bodies this one runs as `<script>_part(KEYS, ARGV)`.
 */

/** A value's declared shape, as the manifest gives it. */
export type ArgSpec =
  | { readonly type: 'version' }
  | { readonly type: 'int'; readonly min: number; readonly max: number; readonly empty?: true }
  | { readonly type: 'enum'; readonly values: readonly string[] }
  | { readonly type: 'bytes'; readonly min: number; readonly max: number }
  | { readonly type: 'id'; readonly ns: string }
  | { readonly type: string };

/** One declared key or argument. */
export interface Slot {
  readonly name: string;
  readonly optional?: true;
  readonly repeated?: true;
  readonly about: string;
}

/** A declared key: its place in the grammar (`emq:{q}:meta`, …). */
export interface KeySlot extends Slot {
  readonly pattern: string;
}

/** A declared argument and its spec. */
export interface ArgSlot extends Slot {
  readonly spec: ArgSpec;
}

/** What a source's header declares. */
export interface Header {
  /** The header's lines, verbatim (each starts with `--`). */
  readonly lines: readonly string[];
  readonly keys: readonly KeySlot[];
  readonly args: readonly ArgSlot[];
  readonly returns: string;
  readonly errors: string;
  readonly modes: readonly { readonly name: string; readonly about: string }[];
  readonly flags: readonly string[];
  readonly uses: readonly string[];
  readonly compose: readonly string[];
}

const FLAGS = new Set(['allow-oom', 'no-writes', 'allow-stale', 'no-cluster', 'allow-cross-slot-keys']);

/** Parses an argument spec (see the tag list above). */
export function parseSpec(spec: string): ArgSpec {
  if (spec === 'version') return { type: 'version' };
  let m = /^(""\|)?(-?\d+)\.\.(-?\d+)$/.exec(spec);
  if (m) return { type: 'int', min: Number(m[2]), max: Number(m[3]), ...(m[1] ? { empty: true as const } : {}) };
  m = /^bytes:(\d+)\.\.(\d+)$/.exec(spec);
  if (m) return { type: 'bytes', min: Number(m[1]), max: Number(m[2]) };
  m = /^id:([a-z]{3})$/.exec(spec);
  if (m) return { type: 'id', ns: m[1] };
  if (spec.includes('|')) return { type: 'enum', values: spec.split('|').map((v) => (v === '""' ? '' : v)) };
  return { type: spec };
}

/** Splits a source into its header comment lines and its body (the rest, trailing newlines cut). */
export function splitSource(source: string): { header: string[]; body: string } {
  const lines = source.split('\n');
  let i = 0;
  while (i < lines.length && lines[i].startsWith('--')) i++;
  return { header: lines.slice(0, i), body: lines.slice(i).join('\n').replace(/\n+$/, '') };
}

/** Reads the tags of a source's header; `file` names it in errors. */
export function parseHeader(file: string, header: readonly string[]): Header {
  const tags: { tag: string; text: string }[] = [];
  for (const line of header) {
    const tag = /^-- @(\w+)\s*(.*)$/.exec(line);
    if (tag) tags.push({ tag: tag[1], text: tag[2].trim() });
    else if (/^--\s{3,}\S/.test(line) && tags.length > 0) tags[tags.length - 1].text += ' ' + line.slice(2).trim();
  }
  const keys: KeySlot[] = [];
  const args: ArgSlot[] = [];
  const modes: { name: string; about: string }[] = [];
  let returns = '';
  let errors = '';
  let flags: string[] = [];
  let uses: string[] = [];
  let compose: string[] = [];
  for (const { tag, text } of tags) {
    const [first = '', second = '', ...rest] = text.split(/\s+/);
    const slot = (): Slot => {
      const m = /^([a-z][\w-]*)([?*]?)$/.exec(first);
      if (!m) throw new Error(`${file}: @${tag} name "${first}" must be lower-case, with an optional ? or *`);
      return { name: m[1], ...(m[2] === '?' ? { optional: true as const } : {}), ...(m[2] === '*' ? { repeated: true as const } : {}), about: rest.join(' ') };
    };
    if (tag === 'key') keys.push({ ...slot(), pattern: second });
    else if (tag === 'arg') args.push({ ...slot(), spec: parseSpec(second) });
    else if (tag === 'returns') returns = text;
    else if (tag === 'errors') errors = text;
    else if (tag === 'mode') modes.push({ name: first, about: [second, ...rest].join(' ') });
    else if (tag === 'flags') flags = text.split(/[\s,]+/).filter(Boolean);
    else if (tag === 'uses') uses = text.split(/\s+/).filter(Boolean);
    else if (tag === 'compose') compose = text.split(/\s+/).filter(Boolean);
    else throw new Error(`${file}: unknown tag @${tag}`);
  }
  for (const f of flags) if (!FLAGS.has(f)) throw new Error(`${file}: unknown script flag ${f}`);
  if (!returns) throw new Error(`${file}: no @returns`);
  if (args[0]?.spec.type !== 'version') throw new Error(`${file}: the first @arg must be the version (spec "version")`);
  for (const list of [keys, args] as const) {
    const names = list.map((s) => s.name);
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice) throw new Error(`${file}: ${twice} is declared twice`);
  }
  return { lines: header, keys, args, returns, errors, modes, flags, uses, compose };
}
