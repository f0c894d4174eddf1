import type { Command } from 'commander';
import type { LatencySummary, MetricsPoint } from '../admin/queue-metrics.js';
import { duration } from '../dashboard/badges.js';
import type { CliContext } from './context.js';
import { CliUsageError, parseDuration } from './output.js';

/** Interval widths `stats` picks from: the smallest giving at most `MAX_ROWS` rows. */
const STEPS = [60_000, 300_000, 900_000, 1_800_000, 3_600_000, 10_800_000, 21_600_000, 43_200_000, 86_400_000];
const MAX_ROWS = 24;

/** An interval's start as `YYYY-MM-DD HH:MM` (UTC). */
const at = (ms: number): string => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');

/** A latency cell: `84 ms`, `1.5 s`, empty when nothing was measured. */
const ms = (v: number | null): string => (v === null ? '' : duration(v));

/** One table row of an interval (or the total). */
function row(label: string, p: MetricsPoint): string[] {
  const r: LatencySummary = p.run;
  return [label, String(p.completed), String(p.failed), String(p.dead), ms(r.p50Ms), ms(r.p95Ms), ms(p.wait.p50Ms)];
}

/**
 * Registers `echomq stats [queue] [--range 1h] [--step 5m]` (docs/admin.md, "Metrics"): the stored
 * history, one row per interval (UTC), then the total. Read only.
 */
export function statsCommand(program: Command, ctx: () => CliContext): void {
  program
    .command('stats [queue]')
    .description('jobs completed, failed and dead per interval with run-time p50/p95 and wait p50, from the stored history (all queues without a queue)')
    .option('--range <duration>', 'how far back (up to 24h at minute steps, 15d at whole-hour steps)', '1h')
    .option('--step <duration>', 'interval width, whole minutes (default: the smallest of 1m, 5m, 15m, 30m, 1h, 3h, 6h, 12h, 1d giving at most 24 rows)')
    .action(async (queue: string | undefined, o: { range: string; step?: string }) => {
      const range = parseDuration(o.range);
      if (range <= 0) throw new CliUsageError('--range must be above 0');
      const step = o.step === undefined ? (STEPS.find((s) => range / s <= MAX_ROWS && (range <= 86_400_000 || s % 3_600_000 === 0)) ?? 86_400_000) : parseDuration(o.step);
      const c = ctx();
      const { queues } = await c.admin();
      const to = Math.ceil(Date.now() / step) * step;
      const opts = { from: to - range, to, step };
      const m = queue === undefined ? await queues.metricsAll(opts) : await queues.metrics(queue, opts);
      const rows = [...m.points.map((p) => row(at(p.at), p)), row('total', m.total)];
      c.out.table(['interval (UTC)', 'completed', 'failed', 'dead', 'run p50', 'run p95', 'wait p50'], rows, m);
      c.out.note(`${queue === undefined ? `all queues (${m.queues ?? 0} read)` : `queue ${queue}`}, ${duration(step)} intervals from the ${m.resolution} history${m.skipped ? `; ${m.skipped} unreadable stored entries skipped` : ''}`);
    });
}
