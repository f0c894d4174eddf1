import type { Command } from 'commander';
import type { AdminServices, CliContext } from './context.js';
import { parseCount } from './output.js';

/** What a registry listing command shows. */
export interface RegistryListing<T> {
  /** The command's name (`queues`, `topics`, `stats`). */
  readonly name: string;
  /** Its help line. */
  readonly description: string;
  /** What one item is called in the `--limit` help. */
  readonly what: string;
  /** The table's columns. */
  readonly head: readonly string[];
  /** Reads one page. */
  readonly page: (admin: AdminServices, after: string | undefined, limit: number) => Promise<{ readonly items: T[]; readonly next?: string; readonly unreadable?: number }>;
  /** One table row of an item. */
  readonly row: (item: T) => readonly unknown[];
}

/** Registers a command that prints one page of a registry (`--after`, `--limit`) and the next page's hint. */
export function registryCommand<T>(parent: Command, ctx: () => CliContext, l: RegistryListing<T>): void {
  parent
    .command(l.name)
    .description(l.description)
    .option('--after <name>', 'the page after this name')
    .option('--limit <n>', `${l.what} per page (1..1000)`, '100')
    .action(async (o: { after?: string; limit: string }) => {
      const c = ctx();
      const page = await l.page(await c.admin(), o.after, parseCount(o.limit));
      c.out.table(l.head, page.items.map(l.row), { items: page.items, next: page.next, unreadable: page.unreadable ?? 0 });
      // Entries that could not be read are rows like the others (their `error` column says why); said once, on stderr.
      if (page.unreadable) process.stderr.write(`echomq: warning: ${page.unreadable} of ${page.items.length} ${l.what} could not be read (see their error column)\n`);
      if (page.next) c.out.note(`next page: --after ${page.next}`);
    });
}
