import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built CLI's entry point. */
export const MAIN = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'src', 'cli', 'main.js');

/** What one CLI run printed and how it exited. */
export interface CliRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `node dist/src/cli/main.js ...args` as a subprocess (built by `npm run build`). */
export function runCli(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<CliRun> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first`);
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, timeout: 20_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}
