/**
 * The public surface (issue 9): the three entry points named in package.json `exports`, read with
 * the TypeScript compiler API. Every exported name is followed to its declaration and must carry a
 * doc comment (and so must every visible member of the main and testing entries' classes and
 * interfaces); no name is exported by two entries; every error class is exported by the main
 * entry; the main entry exports no internals (orchestrators, explorers, resolve* helpers, tuning
 * constants), no wire (that is /protocol) and no test helper (that is /testing); the committed API
 * reference lists exactly the exports.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Each entry: its package subpath and its source file. */
const ENTRIES = {
  '.': 'src/index.ts',
  './protocol': 'src/protocol.ts',
  './testing': 'src/testing.ts',
  './unstable': 'src/unstable.ts',
} as const;
type Subpath = keyof typeof ENTRIES;

/** One exported name of an entry, followed to its declaration(s). */
interface Exported {
  readonly entry: Subpath;
  readonly name: string;
  readonly symbol: ts.Symbol;
  readonly declarations: readonly ts.Declaration[];
}

function program(): ts.Program {
  const config = ts.getParsedCommandLineOfConfigFile(join(ROOT, 'tsconfig.json'), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  });
  if (!config) throw new Error('cannot read tsconfig.json');
  return ts.createProgram(
    Object.values(ENTRIES).map((f) => join(ROOT, f)),
    { ...config.options, noEmit: true },
  );
}

const prog = program();
const checker = prog.getTypeChecker();

function exportsOf(entry: Subpath): Exported[] {
  const file = prog.getSourceFile(join(ROOT, ENTRIES[entry]));
  if (!file) throw new Error(`${ENTRIES[entry]} is not in the program`);
  const mod = checker.getSymbolAtLocation(file);
  if (!mod) throw new Error(`${ENTRIES[entry]} is not a module`);
  return checker.getExportsOfModule(mod).map((s) => {
    const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
    return { entry, name: s.name, symbol: target, declarations: target.declarations ?? [] };
  });
}

const surface = (Object.keys(ENTRIES) as Subpath[]).flatMap(exportsOf);
const where = (d: ts.Declaration): string => {
  const f = d.getSourceFile();
  return `${relative(ROOT, f.fileName)}:${f.getLineAndCharacterOfPosition(d.getStart()).line + 1}`;
};

/** True when the declaration (or its variable statement) has a non-empty `/** … *\/` comment. */
function documented(d: ts.Declaration): boolean {
  const node = ts.isVariableDeclaration(d) ? d.parent.parent : d;
  return ts.getJSDocCommentsAndTags(node).some((j) => ts.isJSDoc(j) && (ts.getTextOfJSDocComment(j.comment) ?? '').trim() !== '');
}

/** Whether `type` derives (transitively) from a class whose symbol satisfies `is`. */
function derivesFrom(type: ts.Type, is: (base: ts.Symbol) => boolean): boolean {
  return (type.getBaseTypes() ?? []).some((b) => (b.symbol !== undefined && is(b.symbol)) || derivesFrom(b, is));
}

const ERRORS_FILE = join(ROOT, 'src/core/errors.ts');
/** The base of every EchoMQ error, `EchoMqError` of errors.ts. */
const isEchoMqError = (s: ts.Symbol): boolean => s.name === 'EchoMqError' && s.declarations?.[0]?.getSourceFile().fileName === ERRORS_FILE;

const hidden = ts.ModifierFlags.Private | ts.ModifierFlags.Protected;

/** The members of a class or interface that its users see: not private, protected or `#private`. */
function visibleMembers(d: ts.ClassDeclaration | ts.InterfaceDeclaration): ts.Declaration[] {
  const out: ts.Declaration[] = [];
  for (const m of d.members) {
    if (ts.isConstructorDeclaration(m)) {
      // Parameter properties (`readonly code`, `public x`) are members too.
      out.push(...m.parameters.filter((p) => ts.isParameterPropertyDeclaration(p, m) && !(ts.getCombinedModifierFlags(p) & hidden)));
    } else if (!ts.isIndexSignatureDeclaration(m) && !ts.isClassStaticBlockDeclaration(m) && !(ts.getCombinedModifierFlags(m) & hidden) && !(m.name && ts.isPrivateIdentifier(m.name))) {
      out.push(m);
    }
  }
  return out;
}

/** A class member without a comment of its own is documented by the interface member it implements. */
function inheritsDoc(m: ts.Declaration, owner: ts.ClassDeclaration | ts.InterfaceDeclaration): boolean {
  const name = ts.getNameOfDeclaration(m)?.getText();
  if (!name) return false;
  for (const clause of owner.heritageClauses ?? []) {
    for (const t of clause.types) {
      const prop = checker.getTypeAtLocation(t).getProperty(name);
      if (prop?.declarations?.some(documented)) return true;
    }
  }
  return false;
}

describe('the public surface', () => {
  it('has entries that each export something, and package.json `exports` maps each to its build output', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, { types: string; default: string }> };
    for (const [sub, src] of Object.entries(ENTRIES)) {
      expect(surface.filter((e) => e.entry === sub).length).toBeGreaterThan(0);
      const out = `./dist/${src.replace(/\.ts$/, '')}`;
      expect(pkg.exports[sub]).toEqual({ types: `${out}.d.ts`, default: `${out}.js` });
    }
  });

  it('documents every export: each one is declared with a doc comment', () => {
    const missing = surface
      .filter((e) => e.declarations.length === 0 || !e.declarations.some(documented))
      .map((e) => `${e.entry === '.' ? 'main' : e.entry.slice(2)}: ${e.name} (${e.declarations.map(where).join(', ') || 'no declaration'})`);
    expect(missing).toEqual([]);
  });

  it('documents every visible member of the classes and interfaces of the main and testing entries', () => {
    const missing: string[] = [];
    for (const e of surface.filter((x) => x.entry === '.' || x.entry === './testing')) {
      for (const d of e.declarations) {
        if (!ts.isClassDeclaration(d) && !ts.isInterfaceDeclaration(d)) continue;
        for (const m of visibleMembers(d)) {
          if (!documented(m) && !inheritsDoc(m, d)) missing.push(`${e.name}.${ts.getNameOfDeclaration(m)?.getText() ?? '?'} (${where(m)})`);
        }
      }
    }
    expect(missing).toEqual([]);
  });

  it('has an API reference (docs/api, `npm run docs`) that lists exactly the exports of each entry', () => {
    for (const [sub, src] of Object.entries(ENTRIES)) {
      const page = `docs/api/@echomq.nestjs${sub === '.' ? '' : sub.slice(1).replace('/', '.')}.md`;
      const listed = [...readFileSync(join(ROOT, page), 'utf8').matchAll(/^### (?:`abstract` )?(\S+?)(?:\(\))?$/gm)].map((m) => m[1].replace(/\\/g, ''));
      const exported = surface.filter((e) => e.entry === sub).map((e) => e.name);
      expect({ page, src, names: [...listed].sort() }).toEqual({ page, src, names: [...exported].sort() });
    }
  });

  it('exports no name from two entries', () => {
    const seen = new Map<string, Subpath[]>();
    for (const e of surface) seen.set(e.name, [...(seen.get(e.name) ?? []), e.entry]);
    const twice = [...seen].filter(([, entries]) => entries.length > 1).map(([name, entries]) => `${name}: ${entries.join(', ')}`);
    expect(twice).toEqual([]);
  });

  it('exports no two names for one declaration', () => {
    const byDecl = new Map<ts.Symbol, string[]>();
    for (const e of surface) byDecl.set(e.symbol, [...(byDecl.get(e.symbol) ?? []), `${e.entry}:${e.name}`]);
    expect([...byDecl.values()].filter((names) => names.length > 1)).toEqual([]);
  });

  it('exports every error class from the main entry', () => {
    const main = new Set(surface.filter((e) => e.entry === '.').map((e) => e.name));
    const errorClasses: string[] = [];
    for (const file of prog.getSourceFiles()) {
      if (!file.fileName.startsWith(join(ROOT, 'src'))) continue;
      const mod = checker.getSymbolAtLocation(file);
      for (const s of mod ? checker.getExportsOfModule(mod) : []) {
        if (!(s.flags & ts.SymbolFlags.Class)) continue;
        const type = checker.getDeclaredTypeOfSymbol(s);
        // Everything deriving from EchoMqError, and every class of errors.ts (FatalJobError, …).
        if (file.fileName === ERRORS_FILE || derivesFrom(type, isEchoMqError)) errorClasses.push(s.name);
      }
    }
    expect(errorClasses.length).toBeGreaterThan(20);
    expect(errorClasses.filter((n) => !main.has(n))).toEqual([]);
  });

  it('keeps internals out of the main entry', () => {
    const internal = surface
      .filter((e) => e.entry === '.')
      .map((e) => e.name)
      .filter((n) => /Orchestrator$|Explorer$|^resolve[A-Z]|^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/.test(n));
    expect(internal).toEqual([]);
  });

  it('leaves test helpers to /testing and the wire to /protocol', () => {
    const wire = /src\/(testing\/|core\/(ids|keys|slot|scripts|wire|flow-wire|bus-wire|event-id|connection|node-lease)\.ts$)/;
    const misplaced = surface
      .filter((e) => e.entry === '.' && e.declarations.some((d) => wire.test(d.getSourceFile().fileName)))
      .filter((e) => !['ValkeyConnectionOptions', 'NodeLeaseError'].includes(e.name))
      .map((e) => `${e.name} (${e.declarations.map(where).join(', ')})`);
    const testingElsewhere = surface
      .filter((e) => e.entry !== './testing' && e.declarations.some((d) => d.getSourceFile().fileName.includes('/src/testing/')))
      .map((e) => e.name);
    expect({ misplaced, testingElsewhere }).toEqual({ misplaced: [], testingElsewhere: [] });
  });
});
