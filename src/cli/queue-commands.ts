import type { Command } from 'commander';
import type { JobCursor, ListableStatus } from '../admin/job-cursor.js';
import { LISTABLE } from '../admin/job-cursor.js';
import type { JobStatus, JobView } from '../queue/job.js';
import type { PurgeableStatus } from '../core/wire/index.js';
import { queueKeys } from '../core/keys.js';
import { fromReplyError } from '../core/reply-errors.js';
import { confirmed, destructive, type DestructiveFlags } from './confirm.js';
import type { CliContext } from './context.js';
import type { QueueInfo } from '../admin/queue-admin.js';
import { registryCommand } from './registry-command.js';
import type { JobSearchCursor, JobSearchPage } from '../admin/job-search.js';
import type { JobPage } from '../admin/job-pages.js';
import { hasFilters, searchOptions, type JobFilterFlags } from './job-filters.js';
import { CliUsageError, StateRefusal, parseCount, parseDuration, problemOf, untilDone } from './output.js';
import { attemptLines, readJob, readOr, showUnreadable } from './read-job.js';

/** The rows of a job's detail table: one field per row. */
function jobRows(j: JobView): [string, unknown][] {
  const rows: [string, unknown][] = [
    ['id', j.id],
    ['queue', j.queue],
    ['name', j.name],
    ['business id', j.ref],
    ['status', j.status],
    ['attempts', j.maxAttempts === undefined ? j.attempts : `${j.attempts} of ${j.maxAttempts}`],
    ['created', j.createdAt],
    ['started', j.startedAt],
    ['finished', j.finishedAt],
    ['payload', j.payloadError ? j.payloadError.raw : j.payload],
    ['result', j.resultError ? j.resultError.raw : j.result],
    ['error', j.error],
    ['progress', j.progress],
    ['checkpoint', j.checkpoint],
    ['cancel requested', j.cancelRequested || undefined],
    ['log', j.logs.length ? j.logs.slice(-5).join(' | ') : undefined],
    ['parent', j.parent ? `${j.parent.id} (queue ${j.parent.queue})` : undefined],
    ...flowRows(j),
  ];
  return rows.filter(([, v]) => v !== undefined);
}

/** Children shown by `echomq job` (the rest are counted; `--json` has them all). */
const SHOWN_CHILDREN = 10;

/** A parent's children: a count, then one row per child (key: id, queue, state or outcome). */
function flowRows(j: JobView): [string, unknown][] {
  const kids = j.children ?? [];
  if (kids.length === 0) return [];
  const waiting = j.waitingFor === undefined ? '' : `, ${j.waitingFor} not finished`;
  const more = kids.length > SHOWN_CHILDREN ? ` (first ${SHOWN_CHILDREN} shown)` : '';
  return [
    ['children', `${kids.length}${waiting}${more}`],
    ...kids.slice(0, SHOWN_CHILDREN).map((c): [string, unknown] => [`child ${c.key}`, `${c.id} ${c.queue} ${c.outcome ?? c.status ?? 'missing'}`]),
  ];
}

/** One job command's outcome: a line, and a refusal (exit 4) when the state said no. */
function done(ctx: CliContext, ok: boolean, yes: string, no: string, value: Record<string, unknown>): void {
  if (!ok) throw new StateRefusal(no);
  ctx.out.line(yes, { ok: true, ...value });
}

/** Registers the Queue commands (docs/admin.md, "The CLI"). */
export function queueCommands(program: Command, ctx: () => CliContext): void {
  registryCommand(program, ctx, {
    name: 'queues',
    description: 'the known queues with their counts and pause state',
    what: 'queues',
    head: ['queue', 'paused', 'paused lanes', 'pending', 'scheduled', 'active', 'done', 'dead', 'cancelled', 'waiting', 'error'],
    page: (admin, after, limit) => admin.queues.list({ after, limit }),
    row: (q: QueueInfo) => [q.name, q.paused ? 'yes' : '', q.pausedLanes.join(' '), q.counts.pending, q.counts.scheduled, q.counts.active, q.counts.done, q.counts.dead, q.counts.cancelled, q.counts.waiting, problemOf(q)],
  });

  program
    .command('jobs <queue>')
    .description('jobs of one status, newest first; with a filter flag, a bounded filtered listing (examines at most --scan entries per call)')
    .option('--status <status>', `one of ${LISTABLE.join(', ')}`, 'dead')
    .option('--limit <n>', 'jobs per page (1..1000)', '20')
    .option('--cursor <cursor>', 'the next-page cursor a previous call printed (with the same filters)')
    .option('--since <when>', 'filter: at or after an ISO instant or a duration ago (1h, 7d); finished-at for done/dead/cancelled, run-at for scheduled, the id\'s mint time otherwise')
    .option('--until <when>', 'filter: at or before an ISO instant or a duration ago')
    .option('--error <text>', 'filter: the last error contains this text (case-insensitive, not a pattern)')
    .option('--where <path=value>', 'filter: a payload field equals a value (user.id=42)')
    .option('--payload <text>', 'filter: the payload JSON contains this text (case-insensitive)')
    .option('--scan <n>', 'filter: most index entries examined per call (1..5000, default 2000)')
    .action(async (queue: string, o: JobFilterFlags & { status: string; limit: string; cursor?: string }) => {
      if (!LISTABLE.includes(o.status as ListableStatus)) throw new CliUsageError(`--status must be one of ${LISTABLE.join(', ')}`);
      const c = ctx();
      const status = o.status as ListableStatus;
      const { queues } = await c.admin();
      const filtered = hasFilters(o);
      const read = await readOr<JobPage | JobSearchPage>(
        filtered
          ? queues.findJobs(queue, { ...searchOptions(o), status, limit: parseCount(o.limit), cursor: o.cursor as JobSearchCursor | undefined })
          : queues.jobs(queue, { status, limit: parseCount(o.limit), cursor: o.cursor as JobCursor | undefined }),
      );
      if (!read.ok) return showUnreadable(c.out, `${o.status} jobs of ${queue}`, read.unreadable);
      const page = read.value;
      const rows = page.jobs.map((j) => [j.id, j.status, j.createdAt, j.at, j.attempts, j.unreadable ? `unreadable: ${j.unreadable}` : j.error]);
      c.out.table(['id', 'status', 'created', 'at', 'attempts', 'error'], rows, page);
      if ('examined' in page) c.out.note(`examined ${page.examined} (${page.examinedSoFar} so far) of ${page.total}; ${page.jobs.length} matched`);
      if (page.next) c.out.note(`next page: --cursor ${page.next}`);
    });

  program
    .command('job <queue> <id>')
    .description('one job: row, attempts, error, result, progress, checkpoint, timings')
    .action(async (queue: string, id: string) => {
      const c = ctx();
      const job = await readJob((await c.admin()).queues, queue, id);
      c.out.fields('unreadable' in job ? Object.entries(job) : jobRows(job), job);
      if (!('unreadable' in job)) for (const l of attemptLines(job)) c.out.note(l); // (nothing with --json: the value has them)
    });

  destructive(program.command('retry <queue> [id]'))
    .description('retry one dead job, or every dead job with --all-dead (bounded calls; asks first)')
    .option('--all-dead', 'retry every dead job of the queue')
    .option('--limit <n>', 'jobs per call with --all-dead (1..1000)', '1000')
    .action(async (queue: string, id: string | undefined, o: DestructiveFlags & { allDead?: boolean; limit: string }) => {
      if ((id === undefined) === !o.allDead) throw new CliUsageError('give a job id or --all-dead (not both)');
      const c = ctx();
      const { queues } = await c.admin();
      if (id !== undefined) return done(c, await queues.retry(queue, id), `retried ${id}`, `job ${id} is not dead`, { id });
      const limit = parseCount(o.limit);
      const dead = (await queues.info(queue)).counts.dead;
      if (!(await confirmed(c, o, { action: `retry ${dead} dead job(s) of queue ${queue}`, count: dead, value: { retried: dead } }))) return;
      const n = await untilDone(() => queues.retryDead(queue, { limit }));
      c.out.line(`retried ${n} dead job(s)`, { ok: true, retried: n });
    });

  for (const [name, verb] of [['pause', 'paused'], ['resume', 'resumed']] as const) {
    program
      .command(`${name} <queue>`)
      .description(name === 'pause' ? 'pause the queue fleet-wide (consumers stop claiming)' : 'resume a paused queue')
      .action(async (queue: string) => {
        const c = ctx();
        const { queues } = await c.admin();
        const changed = name === 'pause' ? await queues.pause(queue) : await queues.resume(queue);
        c.out.line(changed ? `${queue} ${verb}` : `${queue} was already ${verb}`, { ok: true, changed });
      });
  }

  destructive(program.command('drain <queue>'))
    .description('drop every waiting job (removed with its row; bounded calls; asks first)')
    .action(async (queue: string, o: DestructiveFlags) => {
      const c = ctx();
      const { queues } = await c.admin();
      const waiting = (await queues.info(queue)).counts.pending;
      if (!(await confirmed(c, o, { action: `delete ${waiting} waiting job(s) of queue ${queue} (drain)`, count: waiting, value: { drained: waiting } }))) return;
      const n = await untilDone(() => queues.drain(queue));
      c.out.line(`drained ${n} job(s)`, { ok: true, drained: n });
    });

  destructive(program.command('purge <queue>'))
    .description('delete finished jobs older than a bound, or all of a status with --all (bounded calls; asks first)')
    .option('--status <status>', 'done, dead or cancelled', 'done')
    .option('--older-than <duration>', 'only jobs finished at least this long ago: e.g. 30s, 15m, 2h, 7d')
    .option('--all', 'every job of the status, whatever its age')
    .action(async (queue: string, o: DestructiveFlags & { status: string; olderThan?: string; all?: boolean }) => {
      if (!PURGEABLE.includes(o.status as PurgeableStatus)) throw new CliUsageError('--status must be done, dead or cancelled');
      if (o.olderThan === undefined && !o.all) throw new CliUsageError('purge needs a bound: --older-than <duration> (e.g. 7d), or --all for every ' + o.status + ' job');
      if (o.olderThan !== undefined && o.all) throw new CliUsageError('give --older-than or --all, not both');
      const status = o.status as PurgeableStatus;
      const olderThanMs = o.all ? 0 : parseDuration(o.olderThan!);
      const c = ctx();
      const { queues } = await c.admin();
      const count = await purgeable(c, queue, status, olderThanMs);
      const which = o.all ? '(all of them)' : `finished over ${o.olderThan} ago`;
      if (!(await confirmed(c, o, { action: `delete ${count} ${status} job(s) of queue ${queue} ${which}`, count, value: { purged: count } }))) return;
      const n = await untilDone(() => queues.purge(queue, { status, olderThanMs }));
      c.out.line(`purged ${n} job(s)`, { ok: true, purged: n });
    });

  program
    .command('promote <queue> <id>')
    .description('make a scheduled job due now')
    .action(async (queue: string, id: string) => {
      const c = ctx();
      done(c, await (await c.admin()).queues.promote(queue, id), `promoted ${id}`, `job ${id} is not scheduled`, { id });
    });

  destructive(program.command('remove <queue> <id>'))
    .description('remove a job that is not running, with its row and payload (asks first)')
    .action(async (queue: string, id: string, o: DestructiveFlags) => {
      const c = ctx();
      const { queues } = await c.admin();
      const job = await queues.job(queue, id);
      if (!(await confirmed(c, o, { action: `remove job ${id} (${job.status}) of queue ${queue} with its row and payload`, count: 1, value: { id, status: job.status } }))) return;
      done(c, await queues.remove(queue, id), `removed ${id}`, `job ${id} is running, a waiting parent or an unfinished flow child: not removed`, { id });
    });

  destructive(program.command('cancel <queue> <id>'))
    .description('cancel a job that has not run (or ask a running one to stop: cooperative cancel; asks first)')
    .action(async (queue: string, id: string, o: DestructiveFlags) => {
      const c = ctx();
      const { queues } = await c.admin();
      const job = await queues.job(queue, id);
      if (FINISHED.includes(job.status)) throw new StateRefusal(`job ${id} has already finished (${job.status}): not cancelled`);
      const action = job.status === 'active' ? `ask running job ${id} of queue ${queue} to stop (cooperative cancel)` : `cancel job ${id} (${job.status}) of queue ${queue}`;
      if (!(await confirmed(c, o, { action, count: 1, value: { id, status: job.status } }))) return;
      const r = await queues.cancel(queue, id);
      if (r === 'finished') throw new StateRefusal(`job ${id} has already finished: not cancelled`);
      if (r === 'flagged') c.out.line(`cancel requested for ${id}: it is running, and stops when its handler next checks job.signal`, { ok: true, id, outcome: r });
      else c.out.line(`cancelled ${id}`, { ok: true, id, outcome: r });
    });
}

/** The statuses `purge` deletes. */
const PURGEABLE: readonly PurgeableStatus[] = ['done', 'dead', 'cancelled'];

/** The statuses a cancel cannot change. */
const FINISHED: readonly JobStatus[] = ['done', 'dead', 'cancelled'];

/** How many jobs of `status` finished at least `olderThanMs` ago (server clock), as `purge.lua` selects them. */
async function purgeable(c: CliContext, queue: string, status: PurgeableStatus, olderThanMs: number): Promise<number> {
  const { queues } = await c.admin();
  const counts = (await queues.info(queue)).counts; // EMQ_NOT_FOUND for an unknown queue
  if (olderThanMs === 0) return counts[status];
  const conn = await c.connection();
  try {
    const [s, us] = await conn.client.time();
    return await conn.client.zcount(queueKeys(queue)[status], '-inf', Number(s) * 1000 + Math.floor(Number(us) / 1000) - olderThanMs);
  } catch (err) {
    throw fromReplyError(err); // a typed error (EMQ_WRONGTYPE for an index of another type, …)
  }
}
