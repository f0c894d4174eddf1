import type { MetricsPoint, StoredMetrics } from '../admin/queue-metrics.js';
import { duration } from './badges.js';
import { html, type SafeHtml } from './html.js';
import type { ReadOutcome } from './entry-rows.js';
import { rangeLinks, type ChartRange } from './metrics-history.js';

/** The size of a chart, in CSS pixels. */
export interface ChartSize {
  /** Width. */
  readonly width: number;
  /** Height. */
  readonly height: number;
}

/** One line of a chart: its legend name, colour and one value per interval (null: a gap). */
interface Line {
  readonly name: string;
  readonly colour: string;
  readonly values: readonly (number | null)[];
}

/** Margins inside the SVG for the axes' labels. */
const PAD = { left: 56, right: 10, top: 24, bottom: 22 };
const COLOURS = { completed: '#2e86de', failed: '#e67e22', dead: '#c0392b', p50: '#2e86de', p95: '#8e44ad' };

/** A round step for about `n` ticks up to `max` (1, 2, 2.5 or 5 × 10^k). */
function niceStep(max: number, n: number): number {
  const raw = max / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

const pad2 = (n: number): string => String(n).padStart(2, '0');

/** A time label (UTC): `HH:MM` within a day, `MM-DD HH:MM` over longer ranges. */
function timeLabel(at: number, long: boolean): string {
  const d = new Date(at);
  const hm = `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}`;
  return long ? `${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())} ${hm}` : hm;
}

/** A per-minute rate as a tick label: `0`, `12`, `1.5`, `2.4k`. */
function rateLabel(v: number): string {
  if (v >= 10_000) return `${(v / 1000).toFixed(0)}k`;
  if (v >= 1000) return `${(v / 1000).toFixed(1)}k`;
  return Number.isInteger(v) ? String(v) : v.toFixed(v < 1 ? 2 : 1);
}

/** The polylines of a line: one per run of values without a gap. */
function polylines(l: Line, x: (i: number) => number, y: (v: number) => number): SafeHtml[] {
  const runs: string[][] = [];
  let run: string[] | undefined;
  l.values.forEach((v, i) => {
    if (v === null) return void (run = undefined);
    if (!run) runs.push((run = []));
    run.push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`);
  });
  return runs.map((pts) => (pts.length === 1 ? html`<circle cx="${pts[0].split(',')[0]}" cy="${pts[0].split(',')[1]}" r="2" fill="${l.colour}"/>` : html`<polyline fill="none" stroke="${l.colour}" stroke-width="1.5" points="${pts.join(' ')}"/>`));
}

/**
 * An inline SVG line chart with axes: y ticks labelled by `label` (the unit in the axis title),
 * x ticks labelled with UTC times, and a legend. Numbers only; no script, style or external asset.
 */
function lineChart(id: string, title: string, unit: string, m: StoredMetrics, lines: readonly Line[], size: ChartSize, label: (v: number) => string): SafeHtml {
  const w = size.width - PAD.left - PAD.right;
  const h = size.height - PAD.top - PAD.bottom;
  const n = m.points.length;
  const max = Math.max(0, ...lines.flatMap((l) => l.values.filter((v): v is number => v !== null)));
  const step = max > 0 ? niceStep(max, 4) : 1;
  const top = Math.max(step, Math.ceil(max / step) * step);
  const x = (i: number): number => PAD.left + (n <= 1 ? w / 2 : (i * w) / (n - 1));
  const y = (v: number): number => PAD.top + h - (v / top) * h;
  const yTicks = Array.from({ length: Math.round(top / step) + 1 }, (_, i) => i * step);
  const long = m.to - m.from > 86_400_000;
  const every = [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30, 60, 120].find((k) => n / k <= 7) ?? Math.ceil(n / 6);
  const xTicks = m.points.map((p, i) => ({ i, at: p.at })).filter((t) => t.i % every === 0);
  const legend = lines.map((l, i) => html`<g class="legend-item" data-series="${l.name}"><rect x="${PAD.left + i * 110}" y="6" width="10" height="10" fill="${l.colour}"/><text x="${PAD.left + 14 + i * 110}" y="15" font-size="11" fill="#1d2733">${l.name}</text></g>`);
  return html`<figure class="chart" id="${id}" data-unit="${unit}"><svg role="img" aria-label="${title} (${unit})" width="${size.width}" height="${size.height}" viewBox="0 0 ${size.width} ${size.height}" font-family="system-ui,sans-serif">
<rect x="${PAD.left}" y="${PAD.top}" width="${w}" height="${h}" fill="#f7f9fb" stroke="#dde3ea"/>
<g class="y-axis">${yTicks.map((v) => html`<line x1="${PAD.left - 4}" x2="${PAD.left + w}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#e3e8ee"/><text class="tick" x="${PAD.left - 6}" y="${(y(v) + 4).toFixed(1)}" font-size="10" text-anchor="end" fill="#5d6b7a">${label(v)}</text>`)}
<text class="axis-title" x="4" y="${PAD.top - 8}" font-size="10" fill="#5d6b7a">${unit}</text></g>
<g class="x-axis">${xTicks.map((t) => html`<line x1="${x(t.i).toFixed(1)}" x2="${x(t.i).toFixed(1)}" y1="${PAD.top + h}" y2="${PAD.top + h + 4}" stroke="#9aa7b4"/><text class="tick" x="${x(t.i).toFixed(1)}" y="${PAD.top + h + 15}" font-size="10" text-anchor="middle" fill="#5d6b7a">${timeLabel(t.at, long)}</text>`)}
<text class="axis-title" x="${PAD.left + w}" y="${PAD.top + h + 15}" font-size="10" text-anchor="end" fill="#5d6b7a">UTC</text></g>
<g class="legend">${legend}</g>
${lines.map((l) => html`<g class="series" data-series="${l.name}">${polylines(l, x, y)}</g>`)}
</svg><figcaption>${title}</figcaption></figure>`;
}

/** Jobs per minute of a count over an interval of `step` ms. */
const perMinute = (n: number, step: number): number => n / (step / 60_000);

/**
 * The throughput chart of stored metrics: completed, failed (retried) and dead jobs as jobs per
 * minute (the interval's count over its minutes), with axes and a legend.
 */
export function throughputChart(m: StoredMetrics, size: ChartSize): SafeHtml {
  const line = (name: 'completed' | 'failed' | 'dead'): Line => ({ name, colour: COLOURS[name], values: m.points.map((p) => perMinute(p[name], m.step)) });
  const t = m.total;
  const title = `Throughput, jobs/min per ${duration(m.step)}: ${t.completed} completed, ${t.failed} failed, ${t.dead} dead in ${duration(m.to - m.from)}${m.skipped ? ` (${m.skipped} unreadable stored entries skipped)` : ''}`;
  return lineChart('throughput-chart', title, 'jobs/min', m, [line('completed'), line('failed'), line('dead')], size, rateLabel);
}

/** The latency chart of stored metrics: p50 and p95 run time (claim → end) per interval, gaps where nothing ran. */
export function latencyChart(m: StoredMetrics, size: ChartSize): SafeHtml {
  const pick = (k: 'p50Ms' | 'p95Ms') => (p: MetricsPoint): number | null => p.run[k];
  const r = m.total.run;
  const w = m.total.wait;
  const title = `Run time (claim → end) per ${duration(m.step)}: p50 ${r.p50Ms === null ? '–' : duration(r.p50Ms)}, p95 ${r.p95Ms === null ? '–' : duration(r.p95Ms)}, mean ${r.meanMs === null ? '–' : duration(r.meanMs)} over ${r.count} runs; wait (enqueue → claim) p50 ${w.p50Ms === null ? '–' : duration(w.p50Ms)}, p95 ${w.p95Ms === null ? '–' : duration(w.p95Ms)}`;
  return lineChart('latency-chart', title, 'run time', m, [
    { name: 'p50', colour: COLOURS.p50, values: m.points.map(pick('p50Ms')) },
    { name: 'p95', colour: COLOURS.p95, values: m.points.map(pick('p95Ms')) },
  ], size, duration);
}

/** A sparkline of completed jobs per interval (no axes: a table cell), its figures in the label and title. */
export function sparkline(m: StoredMetrics, size: ChartSize): SafeHtml {
  const values = m.points.map((p) => p.completed);
  const max = Math.max(1, ...values);
  const x = (i: number): number => (values.length <= 1 ? 0 : (i * (size.width - 2)) / (values.length - 1)) + 1;
  const y = (v: number): number => size.height - 1 - (v / max) * (size.height - 2);
  const label = `${m.total.completed} completed, ${m.total.failed} failed, ${m.total.dead} dead in ${duration(m.to - m.from)} (peak ${max === 1 && !values.includes(1) ? 0 : max} per ${duration(m.step)})`;
  return html`<svg class="spark" role="img" aria-label="${label}" width="${size.width}" height="${size.height}" viewBox="0 0 ${size.width} ${size.height}"><title>${label}</title>
<rect x="0" y="0" width="${size.width}" height="${size.height}" fill="#f7f9fb" stroke="#dde3ea"/>${polylines({ name: 'completed', colour: COLOURS.completed, values }, x, y)}</svg>`;
}

/** Where a chart region links its ranges: the page's path and the query it keeps (`status=dead&`). */
export interface ChartPlace {
  /** The page's path below the mount, with the mount (`/echomq/queues/orders`). */
  readonly href: string;
  /** The query kept by the range links, ending in `&` (or empty). */
  readonly keep?: string;
}

/**
 * The live chart region of a page (`<div id="chart" data-live>`): the range links, the
 * throughput chart and, for one queue, the latency chart; a history that could not be read says
 * why instead.
 */
export function chartRegion(place: ChartPlace, range: ChartRange, read: ReadOutcome<StoredMetrics>, latency: boolean): SafeHtml {
  const body = read.ok
    ? [throughputChart(read.value, { width: 760, height: 180 }), latency ? latencyChart(read.value, { width: 760, height: 160 }) : '']
    : html`<p class="notice err" id="history-unreadable">history unreadable: ${read.error}</p>`;
  return html`<div id="chart" data-live>${rangeLinks(place.href, range, place.keep)}${body}</div>`;
}
