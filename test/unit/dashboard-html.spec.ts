import type { MetricsPoint, StoredMetrics } from '../../src/admin/queue-metrics.js';
import { latencyChart, sparkline, throughputChart } from '../../src/dashboard/chart.js';
import { escapeHtml, html, raw } from '../../src/dashboard/html.js';

// Issue 12: one escaping function behind every template of the dashboard.
describe('the dashboard templates', () => {
  it('escapeHtml escapes every character that could open markup or leave an attribute', () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&\`</a>`)).toBe('&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&#96;&lt;/a&gt;');
  });

  it('the html tag escapes values (in lists too), inserts fragments it built once, and drops nothing but null, undefined and false', () => {
    const evil = '<script>alert(1)</script>';
    const inner = html`<b>${evil}</b>`;
    const out = html`<p title="${evil}">${[evil, inner, 3, null, undefined, false]}</p>`.text;
    expect(out).toBe('<p title="&lt;script&gt;alert(1)&lt;/script&gt;">&lt;script&gt;alert(1)&lt;/script&gt;<b>&lt;script&gt;alert(1)&lt;/script&gt;</b>3</p>');
    expect(html`${raw('<hr>')}`.text).toBe('<hr>');
  });

  it('the charts of the stored history have y ticks in their unit, UTC time ticks, a legend, and gaps where nothing ran', () => {
    const none = { count: 0, meanMs: null, p50Ms: null, p95Ms: null, p99Ms: null };
    const at = Date.UTC(2026, 11, 7, 17, 0);
    const pt = (i: number, completed: number, p50: number | null): MetricsPoint => ({
      at: at + i * 60_000, completed, failed: i === 1 ? 3 : 0, dead: i === 2 ? 1 : 0, wait: none,
      run: p50 === null ? none : { count: completed, meanMs: p50, p50Ms: p50, p95Ms: p50 * 2, p99Ms: p50 * 3 },
    });
    const points = [pt(0, 10, 40), pt(1, 30, 1500), pt(2, 0, null), pt(3, 5, 20)];
    const m: StoredMetrics = { queue: 'q', from: at, to: at + 240_000, step: 60_000, resolution: 'minute', points, total: pt(0, 45, 100), skipped: 0 };
    const t = throughputChart(m, { width: 600, height: 160 }).text;
    expect(t).toContain('>jobs/min</text>');
    for (const tick of ['>0</text>', '>10</text>', '>30</text>', '>17:00</text>', '>17:01</text>', '>UTC</text>']) expect([tick, t.includes(tick)]).toEqual([tick, true]);
    for (const s of ['completed', 'failed', 'dead']) expect(t).toContain(`data-series="${s}"`);
    expect(t).not.toMatch(/style=|on[a-z]+=|NaN|Infinity/);
    const l = latencyChart(m, { width: 600, height: 160 }).text;
    expect(l).toContain('>run time</text>');
    expect(l).toContain('>3.0 s</text>'); // the top tick, formatted with duration()
    expect(l).toContain('>0 ms</text>');
    // p50 and p95 each break at the empty minute: a line over the first two minutes, a dot for the last.
    expect([l.match(/<polyline/g)?.length, l.match(/<circle/g)?.length]).toEqual([2, 2]);
    expect(sparkline(m, { width: 100, height: 20 }).text).toContain('45 completed, 0 failed, 0 dead in 4 min (peak 30 per 1 min)');
  });
});
