/**
 * The Lua build (pure: texts in, texts out; `scripts/lua-build.ts` reads and writes the files).
 * Each script is written once as a source in `lua/src/` and assembled with the shared fragments
 * of `lua/lib/` into the bytes every runtime loads, `lua/<name>.lua`:
 *
 *   [#!lua flags=…]                       when the header declares @flags
 *   -- <name>.lua: EchoMQ protocol vN. …  the banner
 *   <the source's header>                  its documentation, tags included
 *   <the fragments' definitions it uses>   each once, in dependency order
 *   [local function <s>_part(KEYS, ARGV) <body of s> end]   per @compose script
 *   local function main(KEYS, ARGV)
 *   <the source's body>
 *   end
 *   return run(main)                       version first, then the body (lib/run.lua)
 *
 * A composed script (round) runs other scripts' bodies as local functions whose parameters
 * shadow KEYS and ARGV; the fragments' per-call memos (the clock, the queue's meta) are shared
 * by its parts, so each read is made once per call.
 */
import { createHash } from 'node:crypto';
import { parseHeader, splitSource, type ArgSlot, type Header, type KeySlot } from './header.js';

/** A fragment of `lua/lib/`: its text (minus its `@requires` line) and what it requires. */
export interface Fragment {
  readonly name: string;
  readonly requires: readonly string[];
  readonly text: string;
}

/** The inputs of a build: sources by script name, fragments by name. */
export interface BuildInput {
  readonly sources: ReadonlyMap<string, string>;
  readonly fragments: ReadonlyMap<string, string>;
}

/** One script of the manifest. */
export interface ManifestScript {
  readonly name: string;
  readonly file: string;
  readonly sha1: string;
  readonly version: string;
  readonly flags: readonly string[];
  readonly keys: readonly KeySlot[];
  readonly args: readonly ArgSlot[];
  readonly returns: string;
  readonly errors: string;
  readonly modes: readonly { readonly name: string; readonly about: string }[];
  readonly fragments: readonly string[];
}

/** `lua/manifest.json`. */
export interface Manifest {
  readonly about: string;
  readonly protocol: string;
  readonly scripts: readonly ManifestScript[];
}

/** What a build produces: the bytes of each script, and the manifest. */
export interface BuildOutput {
  readonly scripts: ReadonlyMap<string, string>;
  readonly manifest: Manifest;
}

/** The fragments every script gets (the runner and what it needs). */
const ALWAYS = ['run'];

/** Parses a fragment: a leading `-- @requires a b` line names what it needs. */
export function parseFragment(name: string, source: string): Fragment {
  const lines = source.replace(/\n+$/, '').split('\n');
  const m = /^-- @requires\s+(.*)$/.exec(lines[0] ?? '');
  return { name, requires: m ? m[1].trim().split(/\s+/) : [], text: (m ? lines.slice(1) : lines).join('\n') };
}

/** The protocol version, read from `lua/lib/version.lua` (`local PROTOCOL = '<v>'`). */
export function protocolVersion(fragments: ReadonlyMap<string, string>): string {
  const m = /^local PROTOCOL = '(\d+)'$/m.exec(fragments.get('version') ?? '');
  if (!m) throw new Error("lua/lib/version.lua must define local PROTOCOL = '<digits>'");
  return m[1];
}

/** The fragments `wanted` needs, each once, every fragment after the ones it requires. */
export function resolveFragments(wanted: readonly string[], fragments: ReadonlyMap<string, Fragment>, who: string): Fragment[] {
  const out: Fragment[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (name: string, chain: readonly string[]): void => {
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'visiting') throw new Error(`${who}: fragments require each other: ${[...chain, name].join(' -> ')}`);
    const f = fragments.get(name);
    if (!f) throw new Error(`${who}: no fragment lua/lib/${name}.lua`);
    state.set(name, 'visiting');
    for (const r of f.requires) visit(r, [...chain, name]);
    state.set(name, 'done');
    out.push(f);
  };
  for (const name of [...ALWAYS, ...wanted].sort()) visit(name, []);
  return out;
}

const sha1 = (text: string): string => createHash('sha1').update(text).digest('hex');

/** One top-level `local` definition of a fragment: the names it defines and its text (with the comment above it). */
interface Definition {
  readonly names: readonly string[];
  readonly text: string;
}

const DEF = /^local (?:function ([A-Za-z_]\w*)|([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*=)/;

/** A fragment's top-level definitions, in order (each from its comment lines to the next one's). */
export function definitions(f: Fragment): Definition[] {
  const lines = f.text.split('\n');
  const starts: number[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!DEF.test(lines[i])) continue;
    let j = i;
    while (j > 0 && lines[j - 1].startsWith('--')) j--;
    starts.push(j);
  }
  if (starts.length === 0 || starts[0] !== 0) {
    const head = lines.slice(0, starts[0] ?? lines.length);
    if (head.some((l) => l.trim() !== '' && !l.startsWith('--'))) throw new Error(`lua/lib/${f.name}.lua: code before its first definition`);
    if (starts.length > 0) starts[0] = 0; // its leading comment (the fragment's own) goes with the first
  }
  return starts.map((from, k) => {
    const text = lines.slice(from, starts[k + 1] ?? lines.length).join('\n');
    const m = DEF.exec(lines.slice(from).find((l) => DEF.test(l))!)!;
    return { names: m[1] ? [m[1]] : m[2].split(',').map((n) => n.trim()), text };
  });
}

/** The identifiers a Lua text uses (comments and strings' contents are not read specially: an over-read only keeps a definition). */
const identifiers = (text: string): Set<string> => new Set(text.replace(/--.*$/gm, '').match(/[A-Za-z_]\w*/g) ?? []);

/**
 * The definitions of `frags` that `roots` use, directly or through other definitions, in fragment
 * order: a script carries only the functions it calls, since Lua makes a closure of every local
 * function at every call (measured: ~0.1 µs each; claim would make 34 where it needs 15).
 */
export function usedDefinitions(frags: readonly Fragment[], roots: readonly string[]): { text: string; fragments: string[] } {
  const all = frags.flatMap((f) => definitions(f).map((d) => ({ ...d, fragment: f.name })));
  const used = new Set<number>();
  let seen = identifiers(roots.join('\n'));
  for (let grew = true; grew; ) {
    grew = false;
    all.forEach((d, i) => {
      if (used.has(i) || !d.names.some((n) => seen.has(n))) return;
      used.add(i);
      seen = new Set([...seen, ...identifiers(d.text)]);
      grew = true;
    });
  }
  const kept = all.filter((_, i) => used.has(i));
  return { text: kept.map((d) => d.text).join('\n'), fragments: [...new Set(kept.map((d) => d.fragment))] };
}

/** Builds every source into its script bytes and the manifest. */
export function build(input: BuildInput): BuildOutput {
  const version = protocolVersion(input.fragments);
  const fragments = new Map([...input.fragments].map(([n, s]) => [n, parseFragment(n, s)]));
  const parsed = new Map<string, { header: Header; body: string }>();
  for (const [name, source] of input.sources) {
    const { header, body } = splitSource(source);
    parsed.set(name, { header: parseHeader(`lua/src/${name}.lua`, header), body });
  }
  const scripts = new Map<string, string>();
  const entries: ManifestScript[] = [];
  for (const name of [...parsed.keys()].sort()) {
    const { header, body } = parsed.get(name)!;
    const parts = header.compose.map((p) => {
      const part = parsed.get(p);
      if (!part) throw new Error(`lua/src/${name}.lua composes ${p}, which has no source`);
      if (part.header.compose.length > 0) throw new Error(`lua/src/${name}.lua composes ${p}, itself a composition`);
      return { name: p, ...part };
    });
    const uses = [...new Set([...header.uses, ...parts.flatMap((p) => p.header.uses)])];
    const frags = resolveFragments(uses, fragments, `lua/src/${name}.lua`);
    const partTexts = parts.map((p) => `local function ${p.name.replace(/-/g, '_')}_part(KEYS, ARGV)\n${p.body}\nend`);
    const lib = usedDefinitions(frags, [...partTexts, body, 'run']);
    const text = [
      ...(header.flags.length > 0 ? [`#!lua flags=${header.flags.join(',')}`] : []),
      `-- ${name}.lua: EchoMQ protocol v${version}. Built from lua/src/${name}.lua and lua/lib/ by \`npm run lua:build\`; do not edit.`,
      ...header.lines,
      ...(lib.text ? [lib.text] : []),
      ...partTexts,
      `local function main(KEYS, ARGV)\n${body}\nend`,
      'return run(main)',
      '',
    ].join('\n');
    scripts.set(name, text);
    entries.push({
      name,
      file: `lua/${name}.lua`,
      sha1: sha1(text),
      version,
      flags: header.flags,
      keys: header.keys,
      args: header.args,
      returns: header.returns,
      errors: header.errors,
      modes: header.modes,
      fragments: lib.fragments,
    });
  }
  const about = 'Generated by `npm run lua:build` from lua/src and lua/lib: every script of the protocol with the SHA1 of its bytes, its keys, arguments, reply and flags. Do not edit.';
  return { scripts, manifest: { about, protocol: version, scripts: entries } };
}

/** The manifest as committed: two-space JSON and a final newline. */
export const manifestText = (m: Manifest): string => `${JSON.stringify(m, null, 2)}\n`;
