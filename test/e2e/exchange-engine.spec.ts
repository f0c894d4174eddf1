/** The sample exchange's matching engine alone (pure: no Valkey). */
import { MatchingEngine } from '../../sample-app/engine/matching-engine.js';
import type { Command, PlaceCommand } from '../../sample-app/engine/engine.types.js';
import { holderJobId, settlementJobId, shardOf, SHARDS } from '../../sample-app/engine/ids.js';
import { candlesOf } from '../../sample-app/market/candles.js';

let n = 0;
const place = (o: Partial<PlaceCommand> & Pick<PlaceCommand, 'side' | 'qty'>): PlaceCommand => ({
  kind: 'place',
  orderId: `o${++n}`,
  clientOrderId: `c${n}`,
  account: 'acct',
  symbol: 'ACME',
  type: 'limit',
  ...o,
});

describe('exchange engine', () => {
  it('matches by price, then time, at the maker price, and rests the remainder', () => {
    const e = new MatchingEngine(0);
    const s1 = place({ side: 'sell', qty: 5, priceTicks: 1_010_000, account: 's1' });
    const s2 = place({ side: 'sell', qty: 5, priceTicks: 1_000_000, account: 's2' });
    const s3 = place({ side: 'sell', qty: 5, priceTicks: 1_000_000, account: 's3' });
    for (const c of [s1, s2, s3]) expect(e.apply(c, 1000).trades).toEqual([]);
    const buy = place({ side: 'buy', qty: 12, priceTicks: 1_020_000, account: 'b' });
    const r = e.apply(buy, 2000);
    expect(r.trades.map((t) => [t.sellAccount, t.priceTicks, t.qty, t.id])).toEqual([
      ['s2', 1_000_000, 5, 'T0.0'],
      ['s3', 1_000_000, 5, 'T0.1'],
      ['s1', 1_010_000, 2, 'T0.2'],
    ]);
    expect(r.trades.every((t) => t.buyOrderId === buy.orderId && t.at === 2000 && t.inputSeq === 3 && t.takerSide === 'buy')).toBe(true);
    expect(e.order(buy.orderId)).toMatchObject({ status: 'filled', filledQty: 12, filledNotionalTicks: 10 * 1_000_000 + 2 * 1_010_000 });
    expect(e.order(s1.orderId)).toMatchObject({ status: 'partially-filled', filledQty: 2 });
    expect(e.depth('ACME')).toEqual({ symbol: 'ACME', bids: [], asks: [{ priceTicks: 1_010_000, qty: 3, orders: 1 }] });
  });

  it('fills a market order with what there is and cancels the rest; a limit that does not cross rests', () => {
    const e = new MatchingEngine(1);
    e.apply(place({ side: 'buy', qty: 3, priceTicks: 990_000 }), 1);
    const m = place({ side: 'sell', type: 'market', qty: 5 });
    const r = e.apply(m, 2);
    expect(r.trades.map((t) => t.qty)).toEqual([3]);
    expect(e.order(m.orderId)).toMatchObject({ status: 'cancelled', filledQty: 3, reason: 'market order: no more liquidity' });
    const l = place({ side: 'sell', qty: 2, priceTicks: 1_000_000 });
    expect(e.apply(l, 3).trades).toEqual([]);
    expect(e.depth('ACME').asks).toEqual([{ priceTicks: 1_000_000, qty: 2, orders: 1 }]);
  });

  it('cancels a resting order once; repeats of a place or a cancel change nothing', () => {
    const e = new MatchingEngine(0);
    const s = place({ side: 'sell', qty: 4, priceTicks: 1_000_000 });
    e.apply(s, 1);
    expect(e.apply(s, 2)).toEqual({ trades: [], orders: [], duplicate: true });
    const c: Command = { kind: 'cancel', orderId: s.orderId, symbol: 'ACME' };
    expect(e.apply(c, 3).orders).toEqual([expect.objectContaining({ orderId: s.orderId, status: 'cancelled', seq: 2 })]);
    expect(e.apply(c, 4).duplicate).toBe(true);
    expect(e.apply(place({ side: 'buy', qty: 4, priceTicks: 2_000_000 }), 5).trades).toEqual([]);
    expect(e.position).toBe(5);
  });

  it('cancels an order whose cancel was sequenced before it', () => {
    const e = new MatchingEngine(0);
    e.apply(place({ side: 'buy', qty: 1, priceTicks: 1_000_000 }), 1);
    const s = place({ side: 'sell', qty: 1, priceTicks: 1_000_000 });
    expect(e.apply({ kind: 'cancel', orderId: s.orderId, symbol: 'ACME' }, 2)).toEqual({ trades: [], orders: [], duplicate: false });
    const r = e.apply(s, 3);
    expect(r.trades).toEqual([]);
    expect(r.orders).toEqual([expect.objectContaining({ orderId: s.orderId, status: 'cancelled', reason: 'cancelled before it reached the book' })]);
    expect(e.depth('ACME').bids).toEqual([{ priceTicks: 1_000_000, qty: 1, orders: 1 }]);
  });

  it('is deterministic: the same commands give the same trades', () => {
    const cmds: Command[] = [];
    let seed = 7;
    const rnd = (k: number): number => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t ^= t + Math.imul(t ^ (t >>> 7), 61 | t);
      return ((t ^ (t >>> 14)) >>> 0) % k;
    };
    for (let i = 0; i < 2000; i++) {
      const side = rnd(2) === 0 ? 'buy' : 'sell';
      cmds.push(rnd(10) === 0 ? { kind: 'cancel', orderId: `o${rnd(i + 1)}`, symbol: 'ACME' } : { ...place({ side, qty: 1 + rnd(20), priceTicks: 1_000_000 + (rnd(21) - 10) * 100 }), orderId: `o${i}` });
    }
    const run = () => {
      const e = new MatchingEngine(2);
      return cmds.flatMap((c, i) => e.apply(c, 1000 + i).trades);
    };
    const a = run();
    expect(a.length).toBeGreaterThan(100);
    expect(run()).toEqual(a);
  });

  it('names shards, holder jobs and settlement jobs stably and validly', () => {
    expect(shardOf('ACME')).toBe(shardOf('ACME'));
    expect(new Set(['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H'].map(shardOf)).size).toBeGreaterThan(1);
    expect(Array.from({ length: SHARDS }, (_, s) => holderJobId(s))).toEqual(['job00000000001', 'job00000000002', 'job00000000003', 'job00000000004']);
    const t = { at: Date.UTC(2026, 0, 1), shard: 3, tradeSeq: 42 };
    const ids = (['settle', 'buy', 'sell'] as const).map((r) => settlementJobId(t, r));
    expect(new Set(ids).size).toBe(3);
    for (const id of ids) expect(id).toMatch(/^job[0-9A-Za-z]{11}$/);
    expect(settlementJobId(t, 'settle')).toBe(ids[0]);
    expect(settlementJobId({ ...t, tradeSeq: 43 }, 'settle')).not.toBe(ids[0]);
  });

  it('computes candles independent of arrival order, counting a trade id once', () => {
    const e = new MatchingEngine(0);
    e.apply(place({ side: 'sell', qty: 10, priceTicks: 100 }), 1000);
    e.apply(place({ side: 'sell', qty: 10, priceTicks: 120 }), 1000);
    const trades = [...e.apply(place({ side: 'buy', qty: 15, priceTicks: 200 }), 1500).trades, ...e.apply(place({ side: 'buy', qty: 1, priceTicks: 200 }), 2100).trades];
    const c = candlesOf(trades, 'ACME', 1000);
    expect(c).toEqual([
      { start: 1000, open: 100, high: 120, low: 100, close: 120, volume: 15, trades: 2 },
      { start: 2000, open: 120, high: 120, low: 120, close: 120, volume: 1, trades: 1 },
    ]);
    expect(candlesOf([...trades].reverse().concat(trades), 'ACME', 1000)).toEqual(c);
  });
});
