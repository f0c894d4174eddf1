/**
 * The dependency check of src/ (scripts/deps.ts): layers only point down, a concept folder is
 * entered through its index.ts only, and no file-level import circle (type-only imports count).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { analyse, checkRepository, importsOf, sourceFiles } from '../../scripts/deps.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('the dependency check of src/', () => {
  const now = checkRepository(ROOT);

  it('finds no upward import, no reach into a concept folder and no circle', () => {
    expect(now).toEqual({ upward: [], folders: [], circles: [] });
  });

  it('reads imports, exports, type imports and dynamic imports, resolved from the file', () => {
    const text = "import { a } from '../core/keys.js';\nimport type { B } from './b.js';\nexport { c } from '../queue/c.js';\nconst d = await import('./d.js');\nimport x from 'iovalkey';";
    expect(importsOf('src/bus/x.ts', text)).toEqual(['src/bus/b.ts', 'src/bus/d.ts', 'src/core/keys.ts', 'src/queue/c.ts']);
  });

  it('flags an import that points up, one between two surfaces, a circle, and /protocol gathering more than the core', () => {
    const files = new Map([
      ['src/core/a.ts', "import { n } from '../nest/n.js';"],
      ['src/nest/n.ts', "import { a } from '../core/a.js';"],
      ['src/queue/q.ts', "import { b } from '../bus/b.js';\nimport { a } from '../core/a.js';"],
      ['src/bus/b.ts', ''],
      ['src/protocol.ts', "export { q } from './queue/q.js';\nexport { a } from './core/a.js';"],
    ]);
    expect(analyse(files)).toEqual({
      upward: ['src/core/a.ts -> src/nest/n.ts', 'src/protocol.ts -> src/queue/q.ts', 'src/queue/q.ts -> src/bus/b.ts'],
      folders: [],
      circles: ['src/core/a.ts | src/nest/n.ts'],
    });
  });

  it('lets a concept folder be entered through its index.ts only, and never from inside', () => {
    const files = new Map([
      ['src/queue/loop/index.ts', "export { run } from './run.js';"],
      ['src/queue/loop/run.ts', "import { x } from './index.js';\nimport { y } from './step.js';"],
      ['src/queue/loop/step.ts', ''],
      ['src/queue/service.ts', "import { run } from './loop/index.js';\nimport { y } from './loop/step.js';"],
    ]);
    expect(analyse(files).folders).toEqual(['src/queue/loop/run.ts -> src/queue/loop/index.ts', 'src/queue/service.ts -> src/queue/loop/step.ts']);
  });

  it('names every file of src/ in one style: kebab-case (subject-role.ts)', () => {
    const misnamed = sourceFiles(ROOT).filter((f) => !/^[a-z0-9]+(-[a-z0-9]+)*\.ts$/.test(f.split('/').pop()!));
    expect(misnamed).toEqual([]);
  });
});
