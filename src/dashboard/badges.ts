import { html, type SafeHtml } from './html.js';

/**
 * The state colours of every page: one class per job state, the same hue wherever a state is
 * shown (a count tab, a table cell, a child row, an attempt), so a page reads at a glance.
 * The palette is in the layout's style (`.st-*`); a state this version does not know gets the
 * neutral badge, never an error (a planted row may hold any status text).
 */
const STATES: ReadonlySet<string> = new Set(['pending', 'scheduled', 'active', 'waiting', 'done', 'dead', 'cancelled', 'failed', 'paused', 'missing']);

/** A state as a coloured badge: `<span class="st st-dead" data-state="dead">dead</span>`. */
export function stateBadge(state: string): SafeHtml {
  const cls = STATES.has(state) ? `st st-${state}` : 'st';
  return html`<span class="${cls}" data-state="${state}">${state}</span>`;
}

const UNITS: readonly (readonly [number, string])[] = [
  [86_400_000, 'd'],
  [3_600_000, 'h'],
  [60_000, 'min'],
  [1_000, 's'],
];

/** A span of milliseconds in its two largest units: `950 ms`, `4.2 s`, `3 min 12 s`, `2 h 5 min`, `3 d 4 h`. */
export function duration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '–';
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  for (let i = 0; i < UNITS.length - 1; i++) {
    const [size, unit] = UNITS[i];
    if (ms >= size) {
      const [nextSize, nextUnit] = UNITS[i + 1];
      const whole = Math.floor(ms / size);
      const rest = Math.floor((ms - whole * size) / nextSize);
      return rest ? `${whole} ${unit} ${rest} ${nextUnit}` : `${whole} ${unit}`;
    }
  }
  return `${Math.round(ms)} ms`;
}

/** An instant relative to `now`: `12 s ago`, `in 3 min`, `just now`. */
export function relative(at: number, now: number): string {
  const d = now - at;
  if (Math.abs(d) < 1_000) return 'just now';
  return d > 0 ? `${duration(d)} ago` : `in ${duration(-d)}`;
}

/**
 * An instant as a page shows it: relative ("3 min ago"), with the exact ISO instant on hover
 * (`title`) and in `datetime`; an invalid date (a planted value) as "invalid date"; nothing for
 * none. `now` is the render's clock, so a live refresh moves the relative text on.
 */
export function when(d: Date | undefined, now: number = Date.now()): SafeHtml | undefined {
  if (d === undefined) return undefined;
  const t = d.getTime();
  if (Number.isNaN(t)) return html`<span class="err">invalid date</span>`;
  const exact = d.toISOString();
  return html`<time datetime="${exact}" title="${exact}">${relative(t, now)}</time>`;
}
