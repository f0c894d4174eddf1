/**
 * Rate limits (`QueueDefaults.rateLimit`, docs/queue.md "Rate limits"): consumers together claim
 * at most `max` jobs per window on the server clock, and a limited consumer waits for the
 * window's end instead of polling.
 */
import { resolveDefaults, BUILTIN_DEFAULTS } from '../../src/unstable.js';
import { codeOf } from '../helpers/refusals.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue } from '../helpers/valkey.js';
import { scriptCalls as countScriptCalls } from '../helpers/script-calls.js';

const f = queueFixture();

const scriptCalls = () => countScriptCalls(f.raw);

describe('rate limits', () => {
  it('two consumers together run at most max jobs per window, and wait without polling', async () => {
    const q = randomQueue('rate');
    await f.queues.enqueueMany(q, Array.from({ length: 12 }, (_, i) => ({ payload: i })));
    const starts: number[] = [];
    const rateLimit = { max: 4, intervalMs: 600 };
    const before = await scriptCalls();
    const t0 = Date.now();
    const a = await startConsumer(f.conn, q, () => void starts.push(Date.now() - t0), { concurrency: 10, rateLimit });
    const b = await startConsumer(f.conn, q, () => void starts.push(Date.now() - t0), { concurrency: 10, rateLimit });
    try {
      const end = Date.now() + 10_000;
      while (starts.length < 12 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      await Promise.all([a.consumer.stop(2000), b.consumer.stop(2000)]);
    }
    expect(starts).toHaveLength(12);
    // Three windows of 4: nothing beyond the fourth job before the first window ends (the first
    // claim opens it, after t0), and the twelfth not before two windows passed.
    starts.sort((x, y) => x - y);
    expect(starts[4]).toBeGreaterThanOrEqual(rateLimit.intervalMs - 50);
    expect(starts[11]).toBeGreaterThanOrEqual(2 * rateLimit.intervalMs - 50);
    // Waiting, not polling: a few script calls per window, not thousands.
    expect((await scriptCalls()) - before).toBeLessThan(150);
  });

  it.each([[{ max: 0, intervalMs: 1000 }], [{ max: 5, intervalMs: 0 }], [{ max: 1.5, intervalMs: 1000 }], [{ max: 5, intervalMs: 86_400_001 }], [null]])('rateLimit %p is refused with EMQ_BAD_OPTION', async (rateLimit) => {
    expect(await codeOf(() => resolveDefaults(BUILTIN_DEFAULTS, { rateLimit: rateLimit as never }))).toBe('EMQ_BAD_OPTION');
  });
});
