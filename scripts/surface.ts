/**
 * The public surface (issues 9 and 36): the exported names of each package entry point (the four
 * subpaths of package.json `exports`), read with the TypeScript compiler API. A name is *runtime*
 * when it has a value meaning (a class, function, variable, enum, or a namespace with values) and
 * is not exported type-only; otherwise it is a *type*. `test/unit/public-surface.spec.ts` compares
 * the live surface with the pinned list `test/unit/public-surface.json`;
 * `npm run surface:pin` (scripts/surface-pin.ts) rewrites that list when a change is deliberate.
 */
import { join } from 'node:path';
import ts from 'typescript';

/** Each entry: its package subpath and its source file. */
export const ENTRIES = {
  '.': 'src/index.ts',
  './protocol': 'src/protocol.ts',
  './testing': 'src/testing.ts',
  './unstable': 'src/unstable.ts',
} as const;
/** A package subpath of `exports`. */
export type Subpath = keyof typeof ENTRIES;
/** The subpaths, in package.json order. */
export const SUBPATHS = Object.keys(ENTRIES) as Subpath[];

/** The pinned file, repository-relative. */
export const PIN_FILE = 'test/unit/public-surface.json';

/** One exported name of an entry, followed to its declaration(s). */
export interface Exported {
  readonly entry: Subpath;
  readonly name: string;
  /** The symbol the name resolves to (aliases followed). */
  readonly symbol: ts.Symbol;
  readonly declarations: readonly ts.Declaration[];
  /** The entry's own export declarations of the name (`export { X } from …`, `export * as ns from …`). */
  readonly exportedBy: readonly ts.Declaration[];
  /** Has a value meaning and is not exported type-only. */
  readonly runtime: boolean;
}

/** The names of one entry: runtime and type-only, each sorted. */
export interface EntryNames {
  readonly runtime: string[];
  readonly types: string[];
}

/** The names of every entry. */
export type SurfaceNames = Record<Subpath, EntryNames>;

/** A program over the four entries with the options of the repository's tsconfig.json. */
export function surfaceProgram(root: string): ts.Program {
  const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  });
  if (!config) throw new Error('cannot read tsconfig.json');
  return ts.createProgram(
    Object.values(ENTRIES).map((f) => join(root, f)),
    { ...config.options, noEmit: true },
  );
}

/** True when some link of the alias chain from `s` is a type-only import or export. */
function typeOnly(checker: ts.TypeChecker, s: ts.Symbol): boolean {
  const seen = new Set<ts.Symbol>();
  let at: ts.Symbol | undefined = s;
  while (at && at.flags & ts.SymbolFlags.Alias && !seen.has(at)) {
    seen.add(at);
    if (at.declarations?.some((d) => ts.isTypeOnlyImportOrExportDeclaration(d))) return true;
    at = checker.getImmediateAliasedSymbol(at);
  }
  return false;
}

/** One exported symbol of a module (an entry, or a namespace export) as an `Exported`. */
function described(checker: ts.TypeChecker, entry: Subpath, s: ts.Symbol, name = s.name): Exported {
  const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
  const runtime = !typeOnly(checker, s) && (target.flags & ts.SymbolFlags.Value) !== 0;
  const exportedBy = s.flags & ts.SymbolFlags.Alias ? (s.declarations ?? []) : [];
  return { entry, name, symbol: target, declarations: target.declarations ?? [], exportedBy, runtime };
}

/** The exports of one entry. */
export function exportsOf(prog: ts.Program, root: string, entry: Subpath): Exported[] {
  const checker = prog.getTypeChecker();
  const file = prog.getSourceFile(join(root, ENTRIES[entry]));
  if (!file) throw new Error(`${ENTRIES[entry]} is not in the program`);
  const mod = checker.getSymbolAtLocation(file);
  if (!mod) throw new Error(`${ENTRIES[entry]} is not a module`);
  return checker.getExportsOfModule(mod).map((s) => described(checker, entry, s));
}

/**
 * The members of an exported namespace (`export * as errors from …` exposes `errors.X`), named
 * `ns.X`; none when `e` is not a namespace.
 */
export function namespaceMembers(prog: ts.Program, e: Exported): Exported[] {
  if (!(e.symbol.flags & (ts.SymbolFlags.ValueModule | ts.SymbolFlags.NamespaceModule))) return [];
  const checker = prog.getTypeChecker();
  return checker.getExportsOfModule(e.symbol).map((s) => described(checker, e.entry, s, `${e.name}.${s.name}`));
}

/** The sorted runtime and type-only names of each entry. */
export function surfaceNames(prog: ts.Program, root: string): SurfaceNames {
  const out = {} as Record<Subpath, EntryNames>;
  for (const sub of SUBPATHS) {
    const all = exportsOf(prog, root, sub);
    const sorted = (xs: Exported[]): string[] => xs.map((e) => e.name).sort();
    out[sub] = { runtime: sorted(all.filter((e) => e.runtime)), types: sorted(all.filter((e) => !e.runtime)) };
  }
  return out;
}

/** The surface as the pinned file holds it (stable key order, a trailing newline). */
export function pinText(names: SurfaceNames): string {
  const body: Record<string, unknown> = {
    $comment: 'The exported names of each entry point (scripts/surface.ts); checked by test/unit/public-surface.spec.ts. Run `npm run surface:pin` to rewrite after a deliberate change.',
  };
  for (const sub of SUBPATHS) body[sub] = { runtime: names[sub].runtime, types: names[sub].types };
  return `${JSON.stringify(body, null, 2)}\n`;
}

/**
 * How the live surface differs from the pinned one, one line per entry and kind that changed
 * (`main runtime: added: A, B; removed: C`); empty when they agree.
 */
export function surfaceDrift(pinned: Partial<Record<string, Partial<EntryNames>>>, live: SurfaceNames): string[] {
  const out: string[] = [];
  const subs = [...new Set([...SUBPATHS, ...Object.keys(pinned).filter((k) => k !== '$comment')])];
  for (const sub of subs) {
    for (const kind of ['runtime', 'types'] as const) {
      const was = new Set(pinned[sub]?.[kind] ?? []);
      const now = new Set((live as Partial<SurfaceNames>)[sub as Subpath]?.[kind] ?? []);
      const added = [...now].filter((n) => !was.has(n)).sort();
      const removed = [...was].filter((n) => !now.has(n)).sort();
      if (added.length === 0 && removed.length === 0) continue;
      const parts = [added.length > 0 ? `added: ${added.join(', ')}` : '', removed.length > 0 ? `removed: ${removed.join(', ')}` : ''];
      out.push(`${sub === '.' ? 'main' : sub.slice(2)} ${kind}: ${parts.filter(Boolean).join('; ')}`);
    }
  }
  return out;
}
