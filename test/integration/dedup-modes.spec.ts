/**
 * De-duplication modes (docs/queue.md "De-duplication"): `window` and `debounce`, a key's own
 * ttlMs, and a key freed when its job is cancelled or removed.
 */
import { adminWire, queueKeys, wire } from '../../src/protocol.js';
import { refusedUnchanged } from '../helpers/refusals.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { randomQueue } from '../helpers/valkey.js';

const f = queueFixture();

async function claimOne(q: string): Promise<{ id: string; token: string; payload: string }> {
  const [j] = (await wire.claim(f.conn.scriptClient, queueKeys(q), 1, 30_000)).jobs;
  return j;
}

describe('dedup: the key is freed when its job is cancelled or removed', () => {
  it('a cancelled pending job frees its key: the next enqueue of it adds a new job', async () => {
    const q = randomQueue('dfree');
    const k = queueKeys(q);
    const a = await f.queues.enqueue(q, { n: 1 }, { key: 'order-1' });
    expect(await f.queues.enqueue(q, { n: 2 }, { key: 'order-1' })).toBe(a);
    expect(await f.raw.get(`emq:{${q}}:keyof:${a}`)).toBe('order-1');
    expect(await f.queues.cancel(q, a)).toBe('cancelled');
    expect(await f.raw.exists(k.dedup('order-1'), `emq:{${q}}:keyof:${a}`)).toBe(0);
    const b = await f.queues.enqueue(q, { n: 3 }, { key: 'order-1' });
    expect(b).not.toBe(a);
    expect((await f.queues.counts(q)).pending).toBe(1);
  });

  it('a scheduled job cancelled, and a finished job removed, free their keys', async () => {
    const q = randomQueue('dfree');
    const k = queueKeys(q);
    const s = await f.queues.enqueue(q, 's', { dedup: { key: 'later' }, delay: 60_000 });
    await f.queues.cancel(q, s);
    expect(await f.raw.exists(k.dedup('later'))).toBe(0);
    const d = await f.queues.enqueue(q, 'd', { dedup: { key: 'done', mode: 'window', ttlMs: 60_000 } });
    const j = await claimOne(q);
    await wire.complete(f.conn.scriptClient, k, 100, [{ id: j.id, token: j.token, result: '' }]);
    expect(await f.queues.enqueue(q, 'again', { dedup: { key: 'done', ttlMs: 60_000 } })).toBe(d);
    expect(await adminWire.remove(f.conn.scriptClient, k, d)).toBe(1);
    expect(await f.raw.exists(k.dedup('done'))).toBe(0);
    expect(await f.queues.enqueue(q, 'again', { dedup: { key: 'done', ttlMs: 60_000 } })).not.toBe(d);
  });

  it('a key taken since by another job is left to it; an active job flagged keeps its key', async () => {
    const q = randomQueue('dfree');
    const k = queueKeys(q);
    const a = await f.queues.enqueue(q, 'a', { dedup: { key: 'x', mode: 'debounce' } });
    await claimOne(q); // a starts: a debounced repeat adds b, which takes the key
    const b = await f.queues.enqueue(q, 'b', { dedup: { key: 'x', mode: 'debounce' } });
    expect(b).not.toBe(a);
    expect(await f.raw.get(k.dedup('x'))).toBe(b);
    expect(await f.queues.cancel(q, a)).toBe('flagged');
    expect(await f.raw.get(k.dedup('x'))).toBe(b);
    expect(await adminWire.remove(f.conn.scriptClient, k, b)).toBe(1);
    expect(await f.raw.exists(k.dedup('x'))).toBe(0);
  });
});

describe('dedup: debounce', () => {
  it('a repeat while the job waits replaces its payload and resets its delay; the job runs once with the last payload', async () => {
    const q = randomQueue('ddeb');
    const k = queueKeys(q);
    const a = await f.queues.enqueue(q, { v: 1 }, { dedup: { key: 'sync-7', mode: 'debounce' }, delay: 300 });
    const at1 = Number(await f.raw.zscore(k.scheduled, a));
    await new Promise((r) => setTimeout(r, 20));
    expect(await f.queues.enqueue(q, { v: 2 }, { dedup: { key: 'sync-7', mode: 'debounce' }, delay: 300 })).toBe(a);
    const at2 = Number(await f.raw.zscore(k.scheduled, a));
    expect(at2).toBeGreaterThan(at1);
    expect(await f.raw.hget(k.data, a)).toBe('{"v":2}');
    expect(await f.raw.zcard(k.scheduled)).toBe(1);
    // Without a delay, the repeat makes it due now.
    expect(await f.queues.enqueue(q, { v: 3 }, { dedup: { key: 'sync-7', mode: 'debounce' } })).toBe(a);
    const j = await claimOne(q);
    expect(j.id).toBe(a);
    expect(j.payload).toBe('{"v":3}');
  });

  it('a pending holder keeps its place in line, its options and lane; the key lives ttlMs from the last repeat', async () => {
    const q = randomQueue('ddeb');
    const k = queueKeys(q);
    const first = await f.queues.enqueue(q, 'first');
    const a = await f.queues.enqueue(q, 'v1', { dedup: { key: 'k', mode: 'debounce', ttlMs: 5000 }, attempts: 4 });
    const last = await f.queues.enqueue(q, 'last');
    expect(await f.queues.enqueue(q, 'v2', { dedup: { key: 'k', mode: 'debounce', ttlMs: 5000 }, attempts: 9 })).toBe(a);
    expect(await f.raw.lrange(k.pending, 0, -1)).toEqual([last, a, first]);
    expect(await f.raw.hget(k.opts, a)).toBe('4|');
    expect(await f.raw.pttl(k.dedup('k'))).toBeGreaterThan(4000);
    expect(await f.raw.pttl(`emq:{${q}}:keyof:${a}`)).toBeGreaterThan(4000);
  });

  it('in one enqueueMany the last repeat of a key wins', async () => {
    const q = randomQueue('ddeb');
    const k = queueKeys(q);
    const ids = await f.queues.enqueueMany(q, [1, 2, 3].map((v) => ({ payload: { v }, opts: { dedup: { key: 'same', mode: 'debounce' as const } } })));
    expect(new Set(ids).size).toBe(1);
    expect(await f.raw.hget(k.data, ids[0])).toBe('{"v":3}');
  });

  it('refuses bad dedup options, writing nothing', async () => {
    const q = randomQueue('dbad');
    await f.queues.enqueue(q, 'seed', { key: 'seed' });
    const bad: unknown[] = [
      { dedup: { key: 'k', mode: 'throttle' } },
      { dedup: { key: 'k', ttlMs: 0 } },
      { dedup: { key: 'k', ttlMs: 2_592_000_001 } },
      { dedup: { key: 'k', ttl: 5 } },
      { dedup: { key: '' } },
      { dedup: 'k' },
      { key: 'k', dedup: { key: 'k' } },
    ];
    for (const opts of bad) await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () => f.queues.enqueue(q, 'x', opts as never));
    await refusedUnchanged(f.raw, q, 'EMQ_BAD_OPTION', () =>
      f.queues.enqueueMany(q, [
        { payload: 1, opts: { dedup: { key: 'a', mode: 'debounce' } } },
        { payload: 2, opts: { dedup: { key: 'b' } } },
      ]),
    );
  });
});
