/** The sample exchange's matching engine alone (pure: no Valkey). */
import { FUTURE_REASON, MatchingEngine, SEEN_HORIZON_MS, STALE_REASON, type EngineSnapshot } from '../../sample-app/engine/matching-engine.js';
import type { Command, OrderState, PlaceCommand, Trade } from '../../sample-app/engine/engine.types.js';
import { mintedAt, settlementJobId, shardOf } from '../../sample-app/engine/ids.js';
import { formatUnits, ticksFromWire } from '../../sample-app/engine/money.js';
import { candlesOf } from '../../sample-app/market/candles.js';

let n = 0;
/** A limit place of `acct` on ACME accepted at 0, with `priceTicks` given as a number for brevity. */
const place = (o: Omit<Partial<PlaceCommand>, 'priceTicks'> & Pick<PlaceCommand, 'side' | 'qty'> & { priceTicks?: number | string }): PlaceCommand => {
  const { priceTicks, ...rest } = o;
  return {
    kind: 'place',
    orderId: `o${++n}`,
    clientOrderId: `c${n}`,
    account: 'acct',
    symbol: 'ACME',
    type: 'limit',
    acceptedAt: 0,
    ...rest,
    ...(priceTicks === undefined ? {} : { priceTicks: String(priceTicks) }),
  };
};

/** A seeded PRNG (mulberry32): `rnd(k)` in 0..k-1. */
function prng(seed: number): (k: number) => number {
  return (k) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t ^= t + Math.imul(t ^ (t >>> 7), 61 | t);
    return ((t ^ (t >>> 14)) >>> 0) % k;
  };
}

/** `count` random commands over three symbols: limits around 100.0000, some markets, cancels of earlier ids, some repeats. */
function randomCommands(count: number, seed: number): { cmd: Command; at: number }[] {
  const rnd = prng(seed);
  const out: { cmd: Command; at: number }[] = [];
  const symbols = ['ACME', 'BOLT', 'CRUX'];
  for (let i = 0; i < count; i++) {
    const at = 1000 + i * 10;
    const symbol = symbols[rnd(3)];
    const r = rnd(20);
    if (r < 2) out.push({ cmd: { kind: 'cancel', orderId: `r${rnd(i + 2)}`, symbol }, at });
    else if (r === 2 && out.length > 0) out.push({ cmd: out[rnd(out.length)].cmd, at }); // an intake re-run
    else {
      const side = rnd(2) === 0 ? 'buy' : 'sell';
      const market = r === 3;
      out.push({
        cmd: { ...place({ side, qty: 1 + rnd(20), symbol, account: `a${rnd(5)}`, acceptedAt: at - rnd(50), ...(market ? { type: 'market' as const } : { priceTicks: 1_000_000 + (rnd(21) - 10) * 100 }) }), orderId: `r${i}` },
        at,
      });
    }
  }
  return out;
}

/** What an engine did and shows: every trade and order state reported, and the depth of each symbol. */
function observe(e: MatchingEngine, cmds: readonly { cmd: Command; at: number }[]): { trades: Trade[]; states: OrderState[]; dup: boolean[] } {
  const trades: Trade[] = [];
  const states: OrderState[] = [];
  const dup: boolean[] = [];
  for (const { cmd, at } of cmds) {
    const r = e.apply(cmd, at);
    trades.push(...r.trades);
    states.push(...r.orders);
    dup.push(r.duplicate);
  }
  return { trades, states, dup };
}

const depths = (e: MatchingEngine) => ['ACME', 'BOLT', 'CRUX'].map((s) => e.depth(s, 1000));

describe('exchange engine', () => {
  it('matches by price, then time, at the maker price, and rests the remainder', () => {
    const e = new MatchingEngine(0);
    const s1 = place({ side: 'sell', qty: 5, priceTicks: 1_010_000, account: 's1' });
    const s2 = place({ side: 'sell', qty: 5, priceTicks: 1_000_000, account: 's2' });
    const s3 = place({ side: 'sell', qty: 5, priceTicks: 1_000_000, account: 's3' });
    for (const c of [s1, s2, s3]) expect(e.apply(c, 1000).trades).toEqual([]);
    const buy = place({ side: 'buy', qty: 12, priceTicks: 1_020_000, account: 'b' });
    const r = e.apply(buy, 2000);
    expect(r.trades.map((t) => [t.sellAccount, t.priceTicks, t.qty, t.notionalTicks, t.id])).toEqual([
      ['s2', '1000000', 5, '5000000', 'T0.0'],
      ['s3', '1000000', 5, '5000000', 'T0.1'],
      ['s1', '1010000', 2, '2020000', 'T0.2'],
    ]);
    expect(r.trades.every((t) => t.buyOrderId === buy.orderId && t.at === 2000 && t.inputSeq === 3 && t.takerSide === 'buy')).toBe(true);
    expect(r.orders.map((o) => [o.orderId, o.status, o.filledQty, o.filledNotionalTicks, o.seq])).toEqual([
      [s2.orderId, 'filled', 5, '5000000', 3],
      [s3.orderId, 'filled', 5, '5000000', 3],
      [s1.orderId, 'partially-filled', 2, '2020000', 3],
      [buy.orderId, 'filled', 12, String(10 * 1_000_000 + 2 * 1_010_000), 3],
    ]);
    // Ended orders are forgotten; the partly filled maker still rests.
    expect(e.order(buy.orderId)).toBeUndefined();
    expect(e.order(s2.orderId)).toBeUndefined();
    expect(e.order(s1.orderId)).toMatchObject({ status: 'partially-filled', filledQty: 2, filledNotionalTicks: '2020000' });
    expect(e.sizes).toEqual({ resting: 1, seen: 3, cancelledEarly: 0 });
    expect(e.depth('ACME')).toEqual({ symbol: 'ACME', bids: [], asks: [{ priceTicks: '1010000', qty: 3, orders: 1 }] });
  });

  it('fills a market order with what there is and cancels the rest; a limit that does not cross rests', () => {
    const e = new MatchingEngine(1);
    e.apply(place({ side: 'buy', qty: 3, priceTicks: 990_000 }), 1);
    const m = place({ side: 'sell', type: 'market', qty: 5 });
    const r = e.apply(m, 2);
    expect(r.trades.map((t) => t.qty)).toEqual([3]);
    expect(r.orders[1]).toMatchObject({ orderId: m.orderId, status: 'cancelled', filledQty: 3, filledNotionalTicks: '2970000', reason: 'market order: no more liquidity' });
    const l = place({ side: 'sell', qty: 2, priceTicks: 1_000_000 });
    expect(e.apply(l, 3).trades).toEqual([]);
    expect(e.depth('ACME').asks).toEqual([{ priceTicks: '1000000', qty: 2, orders: 1 }]);
  });

  it('cancels a resting order once; repeats of a place or a cancel change nothing', () => {
    const e = new MatchingEngine(0);
    const s = place({ side: 'sell', qty: 4, priceTicks: 1_000_000 });
    e.apply(s, 1);
    expect(e.apply(s, 2)).toEqual({ trades: [], orders: [], duplicate: true });
    const c: Command = { kind: 'cancel', orderId: s.orderId, symbol: 'ACME' };
    expect(e.apply(c, 3).orders).toEqual([expect.objectContaining({ orderId: s.orderId, status: 'cancelled', seq: 2, reason: 'cancelled by request' })]);
    expect(e.apply(c, 4).duplicate).toBe(true);
    expect(e.apply(s, 5).duplicate).toBe(true); // a re-run of its intake after the cancel
    expect(e.apply(place({ side: 'buy', qty: 4, priceTicks: 2_000_000 }), 6).trades).toEqual([]);
    expect(e.position).toBe(6);
  });

  it('cancels an order whose cancel was sequenced before it', () => {
    const e = new MatchingEngine(0);
    e.apply(place({ side: 'buy', qty: 1, priceTicks: 1_000_000 }), 1);
    const s = place({ side: 'sell', qty: 1, priceTicks: 1_000_000 });
    expect(e.apply({ kind: 'cancel', orderId: s.orderId, symbol: 'ACME' }, 2)).toEqual({ trades: [], orders: [], duplicate: false });
    const r = e.apply(s, 3);
    expect(r.trades).toEqual([]);
    expect(r.orders).toEqual([expect.objectContaining({ orderId: s.orderId, status: 'cancelled', reason: 'cancelled before it reached the book' })]);
    expect(e.depth('ACME').bids).toEqual([{ priceTicks: '1000000', qty: 1, orders: 1 }]);
  });

  it('trades 999,999 × 99,999.9999 exactly: notional, fills and their sum as decimal strings', () => {
    const e = new MatchingEngine(0);
    const price = 999_999_999; // ticks: 99,999.9999
    const trades: Trade[] = [];
    for (let i = 0; i < 11; i++) {
      e.apply(place({ side: 'sell', qty: 999_999, priceTicks: price, account: 'whale-b' }), 10 + i);
      const r = e.apply(place({ side: 'buy', qty: 999_999, priceTicks: price, account: 'whale-a' }), 10 + i);
      trades.push(...r.trades);
      expect(r.orders.map((o) => [o.status, o.filledNotionalTicks])).toEqual([['filled', '999998999000001'], ['filled', '999998999000001']]);
    }
    expect(trades.map((t) => [t.priceTicks, t.qty, t.notionalTicks])).toEqual(trades.map(() => ['999999999', 999_999, '999998999000001']));
    const paid = -trades.reduce((s, t) => s + ticksFromWire(t.notionalTicks), 0n);
    expect(paid).toBe(-10999988989000011n);
    expect(formatUnits(paid)).toBe('-1099998898900.0011');
    // The same sum in doubles is off by one tick: why no number ever holds money.
    expect(trades.reduce((s, t) => s - t.qty * (price / 10_000), 0).toFixed(4)).not.toBe('-1099998898900.0011');
  });

  it('is deterministic: the same commands give the same trades', () => {
    const cmds = randomCommands(2000, 7);
    const a = observe(new MatchingEngine(2), cmds);
    expect(a.trades.length).toBeGreaterThan(100);
    expect(observe(new MatchingEngine(2), cmds)).toEqual(a);
  });

  it('restores from a snapshot at any position and carries on exactly as the engine that took it', () => {
    const cmds = randomCommands(3000, 11);
    const a = new MatchingEngine(3);
    const full = observe(a, cmds);
    expect(full.trades.length).toBeGreaterThan(300);
    expect(full.dup.filter(Boolean).length).toBeGreaterThan(50);
    for (const k of [0, 1, 777, 1500, 2999, 3000]) {
      const head = new MatchingEngine(3);
      const before = observe(head, cmds.slice(0, k));
      // Through JSON, as it is stored: nothing in it needs more than JSON.
      const snap = JSON.parse(JSON.stringify(head.snapshot())) as EngineSnapshot;
      expect(snap).toEqual(head.snapshot());
      expect(snap.position).toBe(k);
      const b = MatchingEngine.restore(3, snap);
      const after = observe(b, cmds.slice(k));
      expect([...before.trades, ...after.trades]).toEqual(full.trades);
      expect([...before.states, ...after.states]).toEqual(full.states);
      expect([...before.dup, ...after.dup]).toEqual(full.dup);
      expect(depths(b)).toEqual(depths(a));
      expect(b.snapshot()).toEqual(a.snapshot());
      expect([b.position, b.tradeCount, b.symbols()]).toEqual([a.position, a.tradeCount, a.symbols()]);
    }
    expect(() => MatchingEngine.restore(2, a.snapshot())).toThrow('snapshot of shard 3 given to shard 2');
  });

  it('remembers order ids for the horizon only, and refuses a place older than the horizon as stale', () => {
    const e = new MatchingEngine(0);
    const H = SEEN_HORIZON_MS;
    const sell = place({ side: 'sell', qty: 2, priceTicks: 100, acceptedAt: 1000 });
    const buy = place({ side: 'buy', qty: 2, priceTicks: 100, acceptedAt: 1000 });
    e.apply(sell, 1000);
    expect(e.apply(buy, 1000).trades).toHaveLength(1);
    expect(e.sizes).toEqual({ resting: 0, seen: 2, cancelledEarly: 0 });
    // A re-run of the buy's intake within the hour is recognised...
    expect(e.apply(buy, 1000 + H).duplicate).toBe(true);
    // ...past it, the id is forgotten, and the place refused: it could be a repeat.
    const late = e.apply(buy, 1001 + H);
    expect(late).toEqual({ trades: [], orders: [expect.objectContaining({ orderId: buy.orderId, status: 'cancelled', filledQty: 0, reason: STALE_REASON })], duplicate: false });
    // A place stamped more than the horizon in the future is refused too (a wrong clock).
    expect(e.apply(place({ side: 'buy', qty: 1, priceTicks: 100, acceptedAt: 3 * H }), 1002 + H).orders[0]).toMatchObject({ status: 'cancelled', reason: FUTURE_REASON });
    // Expired ids are dropped at most once a second of log time.
    e.apply({ kind: 'cancel', orderId: 'gone', symbol: 'ACME' }, 2000 + H);
    expect(e.sizes).toEqual({ resting: 0, seen: 0, cancelledEarly: 1 });
    // A resting order is never forgotten, however old: a repeat of it stays a repeat.
    const rest = place({ side: 'sell', qty: 1, priceTicks: 100, acceptedAt: 2000 + H });
    e.apply(rest, 2000 + H);
    e.apply({ kind: 'cancel', orderId: 'never-placed', symbol: 'ACME' }, 2000 + H);
    expect(e.apply(rest, 5000 + 3 * H).duplicate).toBe(true);
    expect(e.sizes).toEqual({ resting: 1, seen: 0, cancelledEarly: 0 });
    expect(e.order(rest.orderId)).toMatchObject({ status: 'open' });
  });

  it('keeps a snapshot of 24,000 orders small once they end, and holds only the last hour of ids', () => {
    const H = SEEN_HORIZON_MS;
    const bytes = (e: MatchingEngine): number => JSON.stringify(e.snapshot()).length;
    const resting = new MatchingEngine(0);
    for (let i = 0; i < 24_000; i++) resting.apply(place({ side: i % 2 ? 'buy' : 'sell', qty: 10, priceTicks: i % 2 ? 990_000 - (i % 500) : 1_010_000 + (i % 500), account: `acc${i % 10}`, acceptedAt: i }), i);
    const ended = new MatchingEngine(0);
    for (let i = 0; i < 12_000; i++) {
      ended.apply(place({ side: 'sell', qty: 10, priceTicks: 1_000_000, account: `acc${i % 10}`, acceptedAt: i }), i);
      ended.apply(place({ side: 'buy', qty: 10, priceTicks: 1_000_000, account: `acc${(i + 1) % 10}`, acceptedAt: i }), i);
    }
    expect([resting.sizes.resting, ended.sizes]).toEqual([24_000, { resting: 0, seen: 24_000, cancelledEarly: 0 }]);
    const [restingBytes, endedBytes] = [bytes(resting), bytes(ended)];
    ended.apply({ kind: 'cancel', orderId: 'x', symbol: 'ACME' }, 12_000 + H + 1);
    const laterBytes = bytes(ended);
    process.stdout.write(`snapshot of 24,000 orders: resting ${restingBytes} B, ended within the hour ${endedBytes} B, ended an hour ago ${laterBytes} B\n`);
    expect(ended.sizes).toEqual({ resting: 0, seen: 0, cancelledEarly: 1 });
    expect(restingBytes).toBeLessThan(24_000 * 300);
    expect(endedBytes).toBeLessThan(24_000 * 30);
    expect(laterBytes).toBeLessThan(300);
  });

  it('names shards and settlement jobs stably and validly, and reads the mint time of an id', () => {
    expect(shardOf('ACME')).toBe(shardOf('ACME'));
    expect(new Set(['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H'].map(shardOf)).size).toBeGreaterThan(1);
    const t = { at: Date.UTC(2026, 0, 1), shard: 3, tradeSeq: 42 };
    const ids = (['settle', 'buy', 'sell'] as const).map((r) => settlementJobId(t, r));
    expect(new Set(ids).size).toBe(3);
    for (const id of ids) expect(id).toMatch(/^job[0-9A-Za-z]{11}$/);
    expect(settlementJobId(t, 'settle')).toBe(ids[0]);
    expect(settlementJobId({ ...t, tradeSeq: 43 }, 'settle')).not.toBe(ids[0]);
    // The mint time of an id: what order entry stamps as acceptedAt.
    expect(mintedAt(ids[0])).toBe(t.at);
    expect(mintedAt('job00000000000')).toBe(Date.UTC(2025, 0, 1));
    expect(mintedAt('x-not-an-id')).toBeUndefined();
  });

  it('computes candles independent of arrival order, counting a trade id once', () => {
    const e = new MatchingEngine(0);
    e.apply(place({ side: 'sell', qty: 10, priceTicks: 100 }), 1000);
    e.apply(place({ side: 'sell', qty: 10, priceTicks: 120 }), 1000);
    const trades = [...e.apply(place({ side: 'buy', qty: 15, priceTicks: 200 }), 1500).trades, ...e.apply(place({ side: 'buy', qty: 1, priceTicks: 200 }), 2100).trades];
    const c = candlesOf(trades, 'ACME', 1000);
    expect(c).toEqual([
      { start: 1000, open: '100', high: '120', low: '100', close: '120', volume: 15, notionalTicks: '1600', trades: 2 },
      { start: 2000, open: '120', high: '120', low: '120', close: '120', volume: 1, notionalTicks: '120', trades: 1 },
    ]);
    expect(candlesOf([...trades].reverse().concat(trades), 'ACME', 1000)).toEqual(c);
  });
});
