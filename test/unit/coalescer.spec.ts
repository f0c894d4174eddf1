import { Coalescer } from '../../src/core/coalescer.js';
import { EchoMqError } from '../../src/core/errors.js';

/** A send that records its calls and answers each item with `item * 10` after a turn. */
function recorder(fail?: (items: readonly number[]) => EchoMqError | undefined) {
  const calls: number[][] = [];
  let out = 0;
  let maxOut = 0;
  const send = async (items: readonly number[]): Promise<number[]> => {
    calls.push([...items]);
    out++;
    maxOut = Math.max(maxOut, out);
    await new Promise((r) => setTimeout(r, 2));
    out--;
    const err = fail?.(items);
    if (err) throw err;
    return items.map((i) => i * 10);
  };
  return { calls, send, maxOut: () => maxOut };
}

describe('Coalescer (group commit of concurrent requests)', () => {
  it('sends a request made when idle at once, and merges the requests made meanwhile into one call, each answered in order', async () => {
    const r = recorder();
    const c = new Coalescer(r.send, 1000);
    const got = await Promise.all([c.submit([1]), c.submit([2, 3]), c.submit([4])]);
    expect(got).toEqual([[10], [20, 30], [40]]);
    expect(r.calls).toEqual([[1], [2, 3, 4]]);
    expect(c.idle).toBe(true);
  });

  it('never splits a request, never exceeds maxItems per call, and keeps at most maxInFlight calls out', async () => {
    const r = recorder();
    const c = new Coalescer(r.send, 5, 2);
    const reqs = Array.from({ length: 12 }, (_, i) => c.submit([i * 2, i * 2 + 1]));
    const got = await Promise.all(reqs);
    expect(got).toEqual(Array.from({ length: 12 }, (_, i) => [i * 20, i * 20 + 10]));
    for (const call of r.calls) {
      expect(call.length).toBeLessThanOrEqual(5);
      expect(call.length % 2).toBe(0);
    }
    expect(r.calls.flat()).toEqual(Array.from({ length: 24 }, (_, i) => i)); // FIFO
    expect(r.maxOut()).toBeLessThanOrEqual(2);
  });

  it('requests made while calls are out go in the next call together', async () => {
    const r = recorder();
    const c = new Coalescer(r.send, 1000, 1);
    const first = c.submit([1]);
    await new Promise((res) => setImmediate(res)); // the first call is out now
    const later = [c.submit([2]), c.submit([3]), c.submit([4])];
    await Promise.all([first, ...later]);
    expect(r.calls).toEqual([[1], [2, 3, 4]]);
  });

  it('sends eagerItems waiting items at once while a call slot is free, the rest at the end of the turn', async () => {
    const r = recorder();
    const c = new Coalescer(r.send, 1000, 3, 3);
    const reqs = Array.from({ length: 10 }, (_, i) => c.submit([i]));
    // Sent within the turn: [0] (idle), then each third item while fewer than 3 calls are out.
    expect(r.calls).toEqual([[0], [1, 2, 3], [4, 5, 6]]);
    const got = await Promise.all(reqs);
    expect(got).toEqual(Array.from({ length: 10 }, (_, i) => [i * 10]));
    expect(r.calls.slice(3)).toEqual([[7, 8, 9]]); // the slot freed by a reply takes the rest
    expect(r.maxOut()).toBeLessThanOrEqual(3);
  });

  it('a merged call refused for one item is re-sent request by request: each caller gets its own answer', async () => {
    const r = recorder((items) => (items.includes(13) ? new EchoMqError('EMQ_PAYLOAD_TOO_LARGE', 'item 13 is too large') : undefined));
    const c = new Coalescer(r.send, 1000);
    // [1] goes at once (nothing out); [13], [2], [3] are merged into the next call, which is refused.
    const got = await Promise.allSettled([c.submit([1]), c.submit([13]), c.submit([2]), c.submit([3])]);
    expect(got[0]).toEqual({ status: 'fulfilled', value: [10] });
    expect(got[1].status).toBe('rejected');
    expect((got[1] as PromiseRejectedResult).reason.code).toBe('EMQ_PAYLOAD_TOO_LARGE');
    expect(got.slice(2)).toEqual([{ status: 'fulfilled', value: [20] }, { status: 'fulfilled', value: [30] }]);
    expect(r.calls).toEqual([[1], [13, 2, 3], [13], [2], [3]]);
  });

  it('a refusal that is not about one item (OOM, NOPERM, a lost connection) fails every merged request once', async () => {
    const r = recorder(() => new EchoMqError('EMQ_OOM', 'OOM command not allowed'));
    const c = new Coalescer(r.send, 1000);
    const got = await Promise.allSettled([c.submit([1]), c.submit([2]), c.submit([3])]);
    expect(got.map((g) => g.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(got.map((g) => (g as PromiseRejectedResult).reason.code)).toEqual(['EMQ_OOM', 'EMQ_OOM', 'EMQ_OOM']);
    expect(r.calls).toEqual([[1], [2, 3]]); // the merged call failed once, not once per request
    expect(c.idle).toBe(true);
  });
});
