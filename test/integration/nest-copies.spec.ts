import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nestCopiesWarning, nestCoreFrom } from '../../src/nest/nest-copies.js';

// `npm install <folder>` makes a symlink: the package then loads @nestjs/core from the
// checkout's node_modules, a second copy beside the app's, and Nest's DI fails with an error
// naming a Reflector. Importing @echomq/nestjs now says so first (a process warning).

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Imports the built package from `cwd` in a fresh node (-e: no entry script); its stderr, after checking the import worked. */
function importFrom(cwd: string): string {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', "await import('@echomq/nestjs'); process.stdout.write('IMPORTED');"], { cwd, encoding: 'utf8' });
  expect({ stdout: r.stdout, status: r.status }).toEqual({ stdout: 'IMPORTED', status: 0 });
  return r.stderr;
}

describe('two copies of @nestjs/core', () => {
  const dir = mkdtempSync(join(tmpdir(), 'echomq-copies-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a symlinked install warns, naming both copies and the way out', () => {
    // An app with its own @nestjs/core (only its presence is read) and the checkout symlinked in.
    const app = join(dir, 'app');
    mkdirSync(join(app, 'node_modules/@nestjs/core'), { recursive: true });
    writeFileSync(join(app, 'node_modules/@nestjs/core/package.json'), '{"name":"@nestjs/core","version":"12.0.0"}');
    mkdirSync(join(app, 'node_modules/@echomq'), { recursive: true });
    symlinkSync(ROOT, join(app, 'node_modules/@echomq/nestjs'));
    const stderr = importFrom(app);
    expect(stderr).toContain('[EMQ_NEST_COPIES]');
    expect(stderr).toContain(`two copies of @nestjs/core: ${join(app, 'node_modules/@nestjs/core')} (the application's) and ${join(ROOT, 'node_modules/@nestjs/core')}`);
    expect(stderr).toContain('npm install --install-links <folder>');
  });

  it('one copy: no warning', () => {
    expect(importFrom(ROOT)).not.toContain('EMQ_NEST_COPIES');
  });

  it('warns only when the entry and the working folder agree on a copy other than ours', () => {
    expect(nestCopiesWarning('/a', ['/b', '/b'])).toMatch(/^EchoMQ: two copies of @nestjs\/core: \/b \(the application's\) and \/a/);
    expect(nestCopiesWarning('/a', [undefined, '/b'])).toBeDefined();
    expect(nestCopiesWarning('/a', ['/a', '/a'])).toBeUndefined();
    expect(nestCopiesWarning('/a', ['/b', '/c'])).toBeUndefined(); // a tool started elsewhere: no guess
    expect(nestCopiesWarning(undefined, ['/b'])).toBeUndefined();
    expect(nestCopiesWarning('/a', [undefined, undefined])).toBeUndefined();
    expect(nestCoreFrom(join(ROOT, 'src/nest'))).toBe(join(ROOT, 'node_modules/@nestjs/core'));
    expect(nestCoreFrom('/')).toBeUndefined();
  });
});
