/**
 * The dependency check of `src/` (issue 36). Layers, lowest first: `core` → `queue` | `bus` |
 * `cache` | `coordination` (each imports only the core) → `admin`, `telemetry`, `follow` (the Bus → Cache
 * follower) → `nest` → `cli`, `dashboard`, `testing`. A file imports its own layer and lower ones.
 * The entry points are the files directly in `src/` (`index.ts`, `protocol.ts`, `testing.ts`,
 * `unstable.ts`): they gather layers from outside, no layer imports them, and `/protocol`'s entry
 * gathers the core only (the wire). A concept folder inside a layer is entered through its
 * `index.ts` only, never from inside. No file-level import circle. Pure: `analyse` reads the files
 * it is given; `test/unit/deps.spec.ts` requires the repository's report to be empty.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

/** Each top folder of `src/` and its rank; a file may import its own folder and lower ranks. */
export const LAYERS: Readonly<Record<string, number>> = {
  core: 0,
  queue: 1,
  bus: 1,
  cache: 1,
  coordination: 1,
  admin: 2,
  follow: 2,
  telemetry: 2,
  nest: 3,
  cli: 4,
  dashboard: 4,
  testing: 4,
};

/** Files that gather layers for a package entry point (exempt from the layer rule). */
export const ENTRIES: readonly string[] = ['src/index.ts', 'src/protocol.ts', 'src/testing.ts', 'src/unstable.ts'];

/** What the check finds: imports that point up (or sideways between the surfaces), and circles. */
export interface DepsReport {
  /** `from -> to`, repository-relative paths, sorted. */
  readonly upward: string[];
  /**
   * Imports that break a concept folder (a folder inside a layer, e.g. `src/queue/consumer/`):
   * from outside to any file but its `index.ts`, or from inside to its own `index.ts`. Sorted.
   */
  readonly folders: string[];
  /** Each circle: its files, sorted, joined by ` | `; the list sorted. */
  readonly circles: string[];
}

/** Every `.ts` file under `dir`, repository-relative (`root` is the repository). */
export function sourceFiles(root: string, dir = 'src'): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(root, dir))) {
    const rel = join(dir, name);
    if (statSync(join(root, rel)).isDirectory()) out.push(...sourceFiles(root, rel));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(rel);
  }
  return out.sort();
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;

/** The relative imports of a file's text, resolved to repository-relative `.ts` paths. */
export function importsOf(file: string, text: string): string[] {
  const out = new Set<string>();
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2];
    out.add(normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts'));
  }
  return [...out].sort();
}

/** The top folder of a `src/` file (undefined for a file directly in `src/`). */
const layerOf = (file: string): string | undefined => /^src\/([^/]+)\//.exec(file)?.[1];

/** The concept folder of a `src/` file: its directory when that lies inside a layer (`src/<layer>/<folder>/…`). */
const folderOf = (file: string): string | undefined => /^(src\/[^/]+\/.+)\/[^/]+$/.exec(file)?.[1];

/** Checks the import graph of `files` (path → text). */
export function analyse(files: ReadonlyMap<string, string>): DepsReport {
  const graph = new Map<string, string[]>();
  for (const [file, text] of files) graph.set(file, importsOf(file, text).filter((to) => files.has(to)));
  const folders: string[] = [];
  for (const [from, tos] of graph) {
    for (const to of tos) {
      const f = folderOf(to);
      if (f === undefined) continue;
      const inside = from.startsWith(`${f}/`);
      if (inside === (to === `${f}/index.ts`)) folders.push(`${from} -> ${to}`);
    }
  }
  const upward: string[] = [];
  for (const [from, tos] of graph) {
    const a = layerOf(from);
    // `/protocol` is the wire alone: its entry gathers the core only.
    if (from === 'src/protocol.ts') for (const to of tos) if (layerOf(to) !== 'core') upward.push(`${from} -> ${to}`);
    if (a === undefined || ENTRIES.includes(from)) continue;
    for (const to of tos) {
      const b = layerOf(to);
      if (b === undefined || b === a) continue;
      const up = (LAYERS[b] ?? 99) > (LAYERS[a] ?? 99);
      const sideways = LAYERS[a] === 1 && LAYERS[b] === 1;
      if (up || sideways || ENTRIES.includes(to)) upward.push(`${from} -> ${to}`);
    }
  }
  return { upward: upward.sort(), folders: folders.sort(), circles: circles(graph) };
}

/** The strongly connected components of more than one file (Tarjan), each as its sorted files. */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      on.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1) out.push(scc.sort().join(' | '));
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return out.sort();
}

/** Reads and checks the repository's `src/`. */
export function checkRepository(root: string): DepsReport {
  return analyse(new Map(sourceFiles(root).map((f) => [f, readFileSync(join(root, f), 'utf8')])));
}
