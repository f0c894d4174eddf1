#!/usr/bin/env node
/**
 * `npx echomq <command>`: the operator CLI over the admin API (docs/admin.md). Tables by default,
 * `--json` for scripts, `--url` or `VALKEY_URL`; exit codes in `EXIT`.
 *
 * @module
 */
import { Command, CommanderError } from 'commander';
import { CliContext, DEFAULT_URL } from './context.js';
import { EXIT, Output, errorLine, exitCodeOf } from './output.js';
import { queueCommands } from './queue-commands.js';
import { busCommands } from './bus-commands.js';
import { processCommands } from './process-commands.js';
import { dashboardCommand } from './dashboard-command.js';
import { statsCommand } from './stats-command.js';

/** Builds the program; `ctx` is created from the global options when a command runs. */
export function buildProgram(): { program: Command; context: () => CliContext | undefined } {
  let context: CliContext | undefined;
  const program = new Command('echomq')
    .description('EchoMQ operator CLI: queues, jobs, topics, groups, dead letters, cache')
    .option('--url <url>', 'Valkey URL (default: $VALKEY_URL or ' + DEFAULT_URL + ')')
    .option('--json', 'print JSON instead of tables')
    .showHelpAfterError()
    .exitOverride();
  const ctx = (): CliContext => {
    if (!context) {
      const o = program.opts<{ url?: string; json?: boolean }>();
      context = new CliContext(o.url ?? process.env.VALKEY_URL ?? DEFAULT_URL, new Output(o.json === true));
    }
    return context;
  };
  queueCommands(program, ctx);
  busCommands(program, ctx);
  processCommands(program, ctx);
  statsCommand(program, ctx);
  dashboardCommand(program, ctx);
  return { program, context: () => context };
}

/** Runs the CLI on `argv`; resolves to the exit code. */
export async function run(argv: readonly string[]): Promise<number> {
  const { program, context } = buildProgram();
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    process.stderr.write(`echomq: ${errorLine(err)}\n`);
    return exitCodeOf(err);
  } finally {
    await context()?.close().catch(() => undefined);
  }
}

process.exitCode = await run(process.argv.slice(2));
