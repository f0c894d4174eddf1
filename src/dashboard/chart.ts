import { html, type SafeHtml } from './html.js';
import type { ThroughputSeries } from './throughput-sampler.js';

/** The size of a chart, in CSS pixels. */
export interface ChartSize {
  /** Width. */
  readonly width: number;
  /** Height. */
  readonly height: number;
}

/** A polyline's points for `values` scaled into the box (newest at the right edge). */
function points(values: readonly number[], max: number, slots: number, size: ChartSize): string {
  const step = size.width / Math.max(1, slots - 1);
  const off = slots - values.length;
  return values.map((v, i) => `${((off + i) * step).toFixed(1)},${(size.height - 1 - (v / max) * (size.height - 2)).toFixed(1)}`).join(' ');
}

/**
 * An inline SVG line chart of a throughput series: done per interval (and dead, when any), with
 * the peak rate per second as its label. Built from numbers only; no script, no external asset.
 */
export function throughputChart(s: ThroughputSeries, size: ChartSize, slots: number): SafeHtml {
  const max = Math.max(1, ...s.done, ...s.dead); // the scale (never 0)
  const peak = Math.max(0, ...s.done);
  const perSecond = (n: number): string => {
    const r = n / (s.intervalMs / 1000);
    return r === 0 ? '0' : r >= 10 ? r.toFixed(0) : r.toFixed(1);
  };
  const last = s.done.length ? perSecond(s.done[s.done.length - 1]) : '0';
  const label = s.done.length < 1 ? 'sampling…' : `${last}/s now, peak ${perSecond(peak)}/s`;
  const dead = s.dead.some((n) => n > 0) ? html`<polyline class="dead" fill="none" stroke="#c0392b" stroke-width="1.5" points="${points(s.dead, max, slots, size)}"/>` : undefined;
  return html`<figure class="chart"><svg role="img" aria-label="${label}" width="${size.width}" height="${size.height}" viewBox="0 0 ${size.width} ${size.height}">
<rect x="0" y="0" width="${size.width}" height="${size.height}" fill="#f7f9fb" stroke="#dde3ea"/>
<polyline class="done" fill="none" stroke="#2e86de" stroke-width="1.5" points="${points(s.done, max, slots, size)}"/>${dead}
</svg><figcaption>${label}</figcaption></figure>`;
}
