/**
 * The public surface (issues 9 and 36): the four entry points named in package.json `exports`, read
 * with the TypeScript compiler API (scripts/surface.ts). Every exported name is followed to its
 * declaration and must carry a doc comment (and so must every visible member of the main and
 * testing entries' classes and interfaces); no name is exported by two entries; every error class
 * is exported by the main entry (directly or through an exported namespace); the main entry exports
 * no internals (orchestrators, explorers, resolve* helpers, tuning constants), no wire (that is
 * /protocol) and no test helper (that is /testing); the exported names of each entry match the
 * pinned list test/unit/public-surface.json (`npm run surface:pin` rewrites it).
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { ENTRIES, PIN_FILE, SUBPATHS, exportsOf, namespaceMembers, surfaceDrift, surfaceNames, surfaceProgram, type Subpath } from '../../scripts/surface.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const prog = surfaceProgram(ROOT);
const checker = prog.getTypeChecker();

const surface = SUBPATHS.flatMap((sub) => exportsOf(prog, ROOT, sub));
const where = (d: ts.Declaration): string => {
  const f = d.getSourceFile();
  return `${relative(ROOT, f.fileName)}:${f.getLineAndCharacterOfPosition(d.getStart()).line + 1}`;
};

/** True when the declaration (or its variable statement, or its `export * as` statement) has a non-empty `/** … *\/` comment. */
function documented(d: ts.Declaration): boolean {
  const node = ts.isVariableDeclaration(d) ? d.parent.parent : ts.isNamespaceExport(d) ? d.parent : d;
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
      // A namespace export (`export * as errors from …`) is declared by a file: its comment is on the export.
      .filter((e) => !(e.declarations.some(documented) || (e.declarations.some(ts.isSourceFile) && e.exportedBy.some(documented))))
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

  it('exports exactly the pinned names of each entry (test/unit/public-surface.json)', () => {
    const pinned = JSON.parse(readFileSync(join(ROOT, PIN_FILE), 'utf8')) as Parameters<typeof surfaceDrift>[0];
    const drift = surfaceDrift(pinned, surfaceNames(prog, ROOT));
    if (drift.length > 0) {
      throw new Error(`the public surface differs from ${PIN_FILE}:\n  ${drift.join('\n  ')}\nrun \`npm run surface:pin\` if deliberate`);
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

  it('exports every error class from the main entry (directly or as a member of an exported namespace)', () => {
    const mainExports = surface.filter((e) => e.entry === '.');
    const main = new Set([...mainExports, ...mainExports.flatMap((e) => namespaceMembers(prog, e))].flatMap((e) => e.declarations));
    const errorClasses: ts.Symbol[] = [];
    for (const file of prog.getSourceFiles()) {
      if (!file.fileName.startsWith(join(ROOT, 'src'))) continue;
      const mod = checker.getSymbolAtLocation(file);
      for (const s of mod ? checker.getExportsOfModule(mod) : []) {
        if (!(s.flags & ts.SymbolFlags.Class)) continue;
        const type = checker.getDeclaredTypeOfSymbol(s);
        // Everything deriving from EchoMqError, and every class of errors.ts (FatalJobError, …).
        if (file.fileName === ERRORS_FILE || derivesFrom(type, isEchoMqError)) errorClasses.push(s);
      }
    }
    expect(errorClasses.length).toBeGreaterThan(20);
    expect(errorClasses.filter((s) => !(s.declarations ?? []).some((d) => main.has(d))).map((s) => s.name)).toEqual([]);
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

/** `Subject` of rxjs (ReplaySubject, BehaviorSubject, … derive from it). */
const isRxSubject = (s: ts.Symbol): boolean => s.name === 'Subject' && (s.declarations ?? []).some((d) => /[\\/]node_modules[\\/]rxjs[\\/]/.test(d.getSourceFile().fileName));

/** Whether a value of `type` is an rxjs Subject (or of a subclass; any member of a union). */
function isSubjectType(type: ts.Type): boolean {
  if (type.isUnion()) return type.types.some(isSubjectType);
  const sym = type.getSymbol();
  if (!sym) return false;
  if (isRxSubject(sym)) return true;
  return (sym.flags & ts.SymbolFlags.Class) !== 0 && derivesFrom(checker.getDeclaredTypeOfSymbol(sym), isRxSubject);
}

// The targets of issue 36, item 3: a small main entry (at most 40 runtime names, no rxjs Subject
// such as the former `busLosses$`) and a /protocol that is the wire alone (no loop, no service).
// They were written while the surface was being shrunk and may have failed then; they are rules
// now: a change that breaks one needs an issue, not a relaxed test.
describe('issue 36 targets', () => {
  it('the main entry exports at most 40 runtime names and no rxjs Subject', () => {
    const main = surface.filter((e) => e.entry === '.');
    const runtime = main.filter((e) => e.runtime).map((e) => e.name).sort();
    const subjects = main
      .filter((e) => e.runtime && e.symbol.flags & ts.SymbolFlags.Variable && isSubjectType(checker.getTypeOfSymbol(e.symbol)))
      .map((e) => e.name);
    expect({ runtimeNames: runtime.length <= 40 ? 'at most 40' : `${runtime.length}: ${runtime.join(', ')}`, subjects }).toEqual({ runtimeNames: 'at most 40', subjects: [] });
  });

  it('/protocol exports no loop or service class (…Consumer, Relay, Follower, Scheduler, Service, Orchestrator, Explorer, Registry)', () => {
    const loops = surface
      .filter((e) => e.entry === './protocol' && e.symbol.flags & ts.SymbolFlags.Class)
      .filter((e) => [e.name, e.symbol.name].some((n) => /(Consumer|Relay|Follower|Scheduler|Service|Orchestrator|Explorer|Registry)$/.test(n)))
      .map((e) => `${e.name} (${e.declarations.map(where).join(', ')})`);
    expect(loops).toEqual([]);
  });
});
