/** Pure units of src/telemetry: the traceparent codec, the job extras field, the histogram, the optional loader. */
import { formatTraceParent, parseTraceParent, traceParentOfExtras } from '../../src/telemetry/traceparent.js';
import { withTraceParent } from '../../src/telemetry/job-trace.js';
import { Histogram } from '../../src/telemetry/metrics-registry.js';
import { loadOpenTelemetry } from '../../src/telemetry/otel-loader.js';
import { errorType } from '../../src/telemetry/tracing.js';
import { InvalidNameError } from '../../src/core/errors.js';

const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('traceparent', () => {
  it('parses and formats the W3C version-00 form', () => {
    const p = parseTraceParent(TP);
    expect(p).toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1 });
    expect(formatTraceParent(p!)).toBe(TP);
    expect(formatTraceParent({ ...p!, traceFlags: 0 })).toBe(TP.replace(/01$/, '00'));
  });

  it('refuses malformed, all-zero, version ff and over-long values', () => {
    for (const bad of [
      '',
      'x',
      TP.toUpperCase(),
      TP.replace('4bf92f3577b34da6a3ce929d0e0e4736', '0'.repeat(32)),
      TP.replace('00f067aa0ba902b7', '0'.repeat(16)),
      `ff${TP.slice(2)}`,
      `${TP}-extra`,
      TP.slice(0, -1),
      `01-${'a'.repeat(300)}`,
      42,
      undefined,
    ]) {
      expect(parseTraceParent(bad)).toBeUndefined();
    }
    // A later version may append fields.
    expect(parseTraceParent(`01${TP.slice(2)}-future`)).toBeDefined();
  });

  it('reads tp from job extras text or object', () => {
    expect(traceParentOfExtras(JSON.stringify({ tp: TP, a: 1 }))).toBe(TP);
    expect(traceParentOfExtras({ tp: TP })).toBe(TP);
    expect(traceParentOfExtras('{"tp":"nope"}')).toBeUndefined();
    expect(traceParentOfExtras('not json "tp"')).toBeUndefined();
    expect(traceParentOfExtras(undefined)).toBeUndefined();
  });

  it('gives each enqueue item the traceparent unless it names its own, keeping its other options', () => {
    const items = withTraceParent([{ payload: 1 }, { payload: 2, opts: { attempts: 3 } }, { payload: 3, opts: { traceparent: 'mine' } }], TP);
    expect(items.map((i) => i.opts)).toEqual([{ traceparent: TP }, { attempts: 3, traceparent: TP }, { traceparent: 'mine' }]);
  });
});

describe('Histogram', () => {
  it('counts each observation in the first bucket whose bound is not below it', () => {
    const h = new Histogram([1, 10]);
    for (const v of [0.5, 1, 1.5, 10, 11, 1000]) h.observe(v);
    expect(h.buckets).toEqual([2, 2, 2]);
    expect(h.count).toBe(6);
    expect(h.sum).toBeCloseTo(1024);
  });
});

describe('loadOpenTelemetry', () => {
  it('resolves to the API when installed and to undefined, quietly, when not', async () => {
    expect(typeof (await loadOpenTelemetry())?.trace.getTracer).toBe('function');
    await expect(loadOpenTelemetry('@opentelemetry/not-installed-anywhere')).resolves.toBeUndefined();
  });
});

describe('errorType', () => {
  it("is an EchoMqError's code, else the error's class name, else _OTHER", () => {
    class TimeoutLike extends Error {}
    expect(errorType(new InvalidNameError('bad'))).toBe('EMQ_BAD_NAME');
    expect(errorType(new TypeError('x'))).toBe('TypeError');
    expect(errorType(new TimeoutLike('x'))).toBe('TimeoutLike');
    expect(errorType('a string')).toBe('_OTHER');
  });
});
