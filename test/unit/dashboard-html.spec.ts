import { throughputChart } from '../../src/dashboard/chart.js';
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

  it('a throughput chart labels the real peak (zero when nothing finished) and draws from numbers only', () => {
    const idle = throughputChart({ done: [0, 0, 0], dead: [0, 0, 0], intervalMs: 1000 }, { width: 100, height: 20 }, 10).text;
    expect(idle).toContain('0/s now, peak 0/s');
    const busy = throughputChart({ done: [2, 30, 5], dead: [0, 1, 0], intervalMs: 500 }, { width: 100, height: 20 }, 10).text;
    expect(busy).toContain('10/s now, peak 60/s');
    expect(busy).toContain('class="dead"');
    expect(throughputChart({ done: [], dead: [], intervalMs: 1000 }, { width: 100, height: 20 }, 10).text).toContain('sampling…');
  });
});
