import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import type { CliContext } from './context.js';
import { CliUsageError } from './output.js';
import { escapeControls } from '../core/control-chars.js';

/** The flags every destructive command takes. */
export interface DestructiveFlags {
  /** Print what would be touched, write nothing. */
  readonly dryRun?: boolean;
  /** Act without asking (scripts, CI). */
  readonly yes?: boolean;
}

/** What a destructive command is about to do, as read just before it asks. */
export interface Intent {
  /** What it does, in the imperative: `delete 12 done job(s) of queue orders`. */
  readonly action: string;
  /** How many jobs or dead letters it would touch now (0: nothing to do, nothing asked). */
  readonly count: number;
  /** The JSON of a dry run (`--json --dry-run`), besides `{ ok, dryRun, count }`. */
  readonly value?: Readonly<Record<string, unknown>>;
}

/** Adds `--dry-run` and `--yes` to a destructive command. */
export function destructive(cmd: Command): Command {
  return cmd.option('--dry-run', 'print what and how many it would touch; write nothing').option('-y, --yes', 'do it without asking (required when stdin is not a terminal)');
}

/** Asks `question` on the terminal (stderr); true for y or yes, false for anything else or end of input. */
async function ask(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await new Promise<string>((resolve) => {
      rl.once('close', () => resolve(''));
      rl.question(`${escapeControls(question)} [y/N] `).then(resolve, () => resolve(''));
    });
    return /^\s*y(es)?\s*$/i.test(answer);
  } finally {
    rl.close();
  }
}

/**
 * Decides whether a destructive command goes on (docs/admin.md, "Destructive commands"):
 * `--dry-run` prints the intent and answers false; `--yes` answers true; nothing to touch prints
 * so and answers false; on a terminal (stdin a TTY) the operator is asked; otherwise it refuses
 * with a usage error (exit 1) saying what it would do and to pass `--yes`. Writes nothing itself.
 */
export async function confirmed(c: CliContext, flags: DestructiveFlags, intent: Intent): Promise<boolean> {
  if (flags.dryRun) {
    c.out.line(`dry run: would ${intent.action} (nothing written)`, { ok: true, dryRun: true, count: intent.count, ...intent.value });
    return false;
  }
  if (flags.yes) return true;
  if (intent.count === 0) {
    c.out.line(`nothing to do: would ${intent.action}`, { ok: true, count: 0, ...intent.value });
    return false;
  }
  if (process.stdin.isTTY) {
    if (await ask(`${capitalised(intent.action)}?`)) return true;
    throw new CliUsageError('aborted: nothing written');
  }
  throw new CliUsageError(`this would ${intent.action}: pass --yes to do it (or --dry-run to see it without writing)`);
}

const capitalised = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);
