import type { Command } from 'commander';
import type { BulkReply } from '../core/wire/index.js';
import type { CliContext } from './context.js';
import type { TopicInfo } from '../admin/bus-admin.js';
import type { CacheNamespaceInfo } from '../admin/cache-admin.js';
import { registryCommand } from './registry-command.js';
import { confirmed, destructive, type DestructiveFlags } from './confirm.js';
import { CliUsageError, parseCount, parseDuration, problemOf, untilDone } from './output.js';
import { readOr, showUnreadable } from './read-job.js';

/** The log bytes cell: `MEMORY USAGE`, or `~n (estimate)` when the server refused it. */
const logBytesCell = (t: TopicInfo): string | number | undefined => (t.logBytesEstimated ? `~${t.logBytes} (estimate)` : t.logBytes);

/** Parses a size: plain bytes, or with `KiB`, `MiB`, `GiB` (also `k`, `m`, `g`: the same powers of 1024). */
function parseSize(text: string): number {
  const m = /^(\d{1,13})\s*(k|kib|m|mib|g|gib)?$/i.exec(text.trim());
  if (!m) throw new CliUsageError(`not a size: ${JSON.stringify(text)} (use e.g. 0, 65536, 512KiB, 64MiB, 1GiB)`);
  const unit = { k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[(m[2] ?? '').charAt(0).toLowerCase()] ?? 1;
  return Number(m[1]) * unit;
}

/** Registers the Bus and Cache commands (docs/admin.md, "The CLI"). */
export function busCommands(program: Command, ctx: () => CliContext): void {
  registryCommand(program, ctx, {
    name: 'topics',
    description: 'the known Bus topics with their log length and bytes, archive segments and bytes, groups and dead letters',
    what: 'topics',
    head: ['topic', 'length', 'log bytes', 'archive segments', 'archive bytes', 'last event', 'groups', 'dead letters', 'error'],
    page: (admin, after, limit) => admin.bus.topics({ after, limit }),
    row: (t: TopicInfo) => [t.name, t.length, logBytesCell(t), t.archiveSegments, t.archiveBytes ?? (t.archiveSegments ? 'uncounted' : 0), t.lastEventId, t.groups, t.deadLetters, problemOf(t)],
  });

  program
    .command('groups <topic>')
    .description("a topic's consumer groups with their pending and lag counts")
    .action(async (topic: string) => {
      const c = ctx();
      const read = await readOr((await c.admin()).bus.groups(topic));
      if (!read.ok) return showUnreadable(c.out, `groups of ${topic}`, read.unreadable);
      const groups = read.value;
      c.out.table(['group', 'consumers', 'pending', 'lag', 'last delivered'], groups.map((g) => [g.name, g.consumers, g.pending, g.lag ?? 'unknown', g.lastDeliveredId]), groups);
    });

  destructive(program.command('dead-letters <topic>'))
    .description("a topic's dead letters, newest first; --replay or --purge them (the given dead ids, or --all; asks first)")
    .argument('[deadIds...]', 'dead-letter ids (the "dead id" column) for --replay / --purge')
    .option('--count <n>', 'how many to list (1..1000)', '20')
    .option('--replay', 'publish them to the topic again (new event ids) and delete them')
    .option('--purge', 'delete them')
    .option('--all', 'with --replay / --purge: every dead letter (bounded calls)')
    .action(async (topic: string, deadIds: string[], o: DestructiveFlags & { count: string; replay?: boolean; purge?: boolean; all?: boolean }) => {
      const c = ctx();
      const { bus } = await c.admin();
      if (!o.replay && !o.purge) {
        if (deadIds.length || o.all || o.yes || o.dryRun) throw new CliUsageError('dead ids, --all, --yes and --dry-run go with --replay or --purge');
        const read = await readOr(bus.deadLetters(topic, { count: parseCount(o.count) }));
        if (!read.ok) return showUnreadable(c.out, `dead letters of ${topic}`, read.unreadable);
        const rows = read.value;
        c.out.table(['dead id', 'event', 'group', 'deliveries', 'error', 'at', 'payload'], rows.map((d) => [d.deadId, d.id, d.group, d.deliveries, d.error, d.at, d.payload]), rows);
        return;
      }
      if (o.replay && o.purge) throw new CliUsageError('give --replay or --purge, not both');
      if ((deadIds.length > 0) === (o.all === true)) throw new CliUsageError('give dead ids or --all (not both)');
      const verb = o.replay ? 'replayed' : 'purged';
      if (o.purge || o.all) {
        const count = o.all ? (await bus.topic(topic)).deadLetters : deadIds.length;
        const what = o.all ? `${count} dead letter(s) of topic ${topic} (all of them)` : `${count} dead letter(s) of topic ${topic} (${deadIds.join(', ')})`;
        const action = o.replay ? `replay ${what} as new events, deleting them` : `delete ${what}`;
        if (!(await confirmed(c, o, { action, count, value: { [verb]: count } }))) return;
      }
      const act = (opts: { ids?: string[]; limit?: number }): Promise<BulkReply> => (o.replay ? bus.replayDead(topic, opts) : bus.purgeDead(topic, opts));
      const n = deadIds.length ? (await act({ ids: deadIds })).count : await untilDone(() => act({}));
      c.out.line(`${verb} ${n} dead letter(s)`, { ok: true, [verb]: n });
    });

  program
    .command('retention <topic>')
    .description("show a topic's retention policy, or replace it with the options given")
    .option('--max-len <n>', 'keep at most this many entries in the live log')
    .option('--max-age <duration>', 'archive entries older than this (e.g. 7d)')
    .option('--archive-max-age <duration>', 'delete archive segments older than this (default 7d)')
    .option('--archive-max-bytes <size>', 'delete the oldest archive segments beyond this size, e.g. 64MiB (default); 0 = no archive')
    .option('--unbounded', 'no default archive bound: an archive bound not given is none (logs a warning)')
    .action(async (topic: string, o: { maxLen?: string; maxAge?: string; archiveMaxAge?: string; archiveMaxBytes?: string; unbounded?: boolean }) => {
      const c = ctx();
      const { bus } = await c.admin();
      if (o.maxLen !== undefined || o.maxAge !== undefined || o.archiveMaxAge !== undefined || o.archiveMaxBytes !== undefined || o.unbounded) {
        await bus.setRetention(topic, {
          maxLen: o.maxLen === undefined ? undefined : parseCount(o.maxLen),
          maxAgeMs: o.maxAge === undefined ? undefined : parseDuration(o.maxAge),
          archiveMaxAgeMs: o.archiveMaxAge === undefined ? undefined : parseDuration(o.archiveMaxAge),
          archiveMaxBytes: o.archiveMaxBytes === undefined ? undefined : parseSize(o.archiveMaxBytes),
          unbounded: o.unbounded,
        });
      }
      const read = await readOr(bus.retention(topic));
      if (!read.ok) return showUnreadable(c.out, `retention of ${topic}`, read.unreadable);
      const p = read.value;
      const bytes = p.archiveMaxBytes === 0 ? 'no archive' : (p.archiveMaxBytes ?? (p.unbounded ? 'unbounded' : 'unset (default at the next trim)'));
      c.out.table(['maxLen', 'maxAgeMs', 'archiveMaxAgeMs', 'archiveMaxBytes'], [[p.maxLen ?? 'unbounded', p.maxAgeMs ?? 'unbounded', p.archiveMaxAgeMs ?? 'forever', bytes]], p);
    });

  const cache = program.command('cache').description('cache namespaces: stats, invalidate a key or a tag');
  registryCommand(cache, ctx, {
    name: 'stats',
    description: 'the known cache namespaces with their invalidation figures',
    what: 'namespaces',
    head: ['namespace', 'invalidations', 'retained', 'last invalidation', 'error'],
    page: (admin, after, limit) => admin.cache.stats({ after, limit }),
    row: (n: CacheNamespaceInfo) => [n.name, n.invalidations, n.retained, n.lastInvalidationAt, problemOf(n)],
  });
  cache
    .command('invalidate <namespace> <key>')
    .description('invalidate one key (every node drops it)')
    .action(async (ns: string, key: string) => {
      const c = ctx();
      await (await c.admin()).cache.invalidate(ns, key);
      c.out.line(`invalidated ${ns}:${key}`, { ok: true });
    });
  cache
    .command('invalidate-tag <namespace> <tag>')
    .description('invalidate every key carrying a tag')
    .action(async (ns: string, tag: string) => {
      const c = ctx();
      await (await c.admin()).cache.invalidateTag(ns, tag);
      c.out.line(`invalidated tag ${tag} of ${ns}`, { ok: true });
    });
}
