import type { Command } from 'commander';
import type { ProcessView } from '../admin/processes.js';
import type { CliContext } from './context.js';

/** Seconds between two instants, as `12 s ago` (a heartbeat read on the server clock). */
function ago(at: Date | undefined, now: Date): string {
  if (!at) return '';
  const s = Math.round((now.getTime() - at.getTime()) / 1000);
  return s >= 0 ? `${s} s ago` : `in ${-s} s`;
}

/** One row of `echomq processes`. */
function row(p: ProcessView, now: Date): unknown[] {
  const i = p.info;
  return [
    p.node < 0 ? '' : p.node,
    p.state,
    i?.host,
    i?.pid,
    i ? `${i.runtime} / ${i.version}` : undefined,
    i ? new Date(i.started) : undefined,
    ago(p.heartbeatAt, now),
    p.leaseExpiresAt,
    i?.queues.map((q) => `${q.name} ${q.active}/${q.concurrency}`).join(', '),
    i?.groups.map((g) => `${g.topic}/${g.group} ${g.consumer} c=${g.concurrency}`).join(', '),
    i?.roles.join(', '),
    p.error ?? (p.state === 'live' && !i ? 'no description (an older runtime)' : i?.truncated ? 'truncated' : undefined),
  ];
}

/** Registers `processes`, `pause-lane` and `resume-lane` (docs/admin.md, "The CLI"). */
export function processCommands(program: Command, ctx: () => CliContext): void {
  program
    .command('processes')
    .description('the EchoMQ processes: host, pid, runtime, queues (active/concurrency), Bus groups, last heartbeat')
    .action(async () => {
      const c = ctx();
      const list = await (await c.admin()).queues.processes();
      const head = ['node', 'state', 'host', 'pid', 'runtime', 'started', 'heartbeat', 'lease until', 'queues', 'groups', 'roles', 'error'];
      c.out.table(head, list.items.map((p) => row(p, list.now)), list);
      c.out.note(`${list.live} live, ${list.gone} gone (lease over: stopped or crashed)`);
      if (list.error) process.stderr.write(`echomq: warning: ${list.error}\n`);
      if (list.unreadable) process.stderr.write(`echomq: warning: ${list.unreadable} process entr${list.unreadable === 1 ? 'y' : 'ies'} could not be read (see their error column)\n`);
    });

  for (const [name, verb] of [['pause-lane', 'paused'], ['resume-lane', 'resumed']] as const) {
    program
      .command(`${name} <queue> <lane>`)
      .description(name === 'pause-lane' ? 'pause one lane (group) of the queue fleet-wide' : 'resume a paused lane')
      .action(async (queue: string, lane: string) => {
        const c = ctx();
        const { queues } = await c.admin();
        const changed = name === 'pause-lane' ? await queues.pauseLane(queue, lane) : await queues.resumeLane(queue, lane);
        c.out.line(changed ? `lane ${lane} of ${queue} ${verb}` : `lane ${lane} of ${queue} was already ${verb}`, { ok: true, changed });
      });
  }
}
