import { existsSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { escapeControls } from '../core/control-chars.js';

/**
 * The folder of the `@nestjs/core` node would load from `dir` (the first
 * `node_modules/@nestjs/core` walking up), with symlinks resolved; undefined when there is none.
 */
export function nestCoreFrom(dir: string): string | undefined {
  for (let d = dir; ; d = dirname(d)) {
    const candidate = join(d, 'node_modules', '@nestjs', 'core');
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    if (dirname(d) === d) return undefined;
  }
}

/**
 * The warning to give when the application and EchoMQ load two different copies of
 * `@nestjs/core`, else undefined. `ours` is EchoMQ's copy; `app` the copies found from the
 * application's entry script and from its working folder (undefined where none was found): it
 * warns only when those agree, so a tool started from elsewhere raises no false alarm.
 */
export function nestCopiesWarning(ours: string | undefined, app: readonly (string | undefined)[]): string | undefined {
  const found = [...new Set(app.filter((a): a is string => a !== undefined))];
  if (ours === undefined || found.length !== 1 || found[0] === ours) return undefined;
  return escapeControls(
    `EchoMQ: two copies of @nestjs/core: ${found[0]} (the application's) and ${ours} (the one @echomq/nestjs loads). ` +
      `Nest's DI then fails with "Nest can't resolve dependencies of the CacheInterceptor (CacheService, ?)": each copy's Reflector is a different token. ` +
      '@echomq/nestjs is probably a symlink into a checkout (npm install <folder>): install the tarball of `npm pack`, or the folder with `npm install --install-links <folder>`.',
  );
}

/** The real folder of a path, or undefined when it does not exist. */
const real = (path: string): string | undefined => {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
};

/**
 * Emits a process warning (code `EMQ_NEST_COPIES`) when this package would load another
 * `@nestjs/core` than the application (a symlinked install), before Nest's DI fails with an error
 * that does not name the cause. Run once, when `@echomq/nestjs` is imported.
 */
export function warnOnNestCopies(): void {
  try {
    const ours = nestCoreFrom(dirname(fileURLToPath(import.meta.url)));
    const entry = process.argv[1] ? real(process.argv[1]) : undefined;
    const warning = nestCopiesWarning(ours, [entry ? nestCoreFrom(dirname(entry)) : undefined, nestCoreFrom(process.cwd())]);
    if (warning) process.emitWarning(warning, { code: 'EMQ_NEST_COPIES' });
  } catch {
    /* a check that cannot run (no file system access, a bundled build) stays quiet */
  }
}
