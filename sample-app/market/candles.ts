/**
 * Candles computed from a list of trades, purely: the reference the projection is checked
 * against, and the rule it follows (open/close = the price of the lowest/highest trade number in
 * the bucket, so arrival order does not matter; a trade id counted once).
 */
import type { Trade } from '../engine/engine.types.js';
import type { Candle } from '../store/exchange.store.js';

/** The candles of `symbol` at interval `iv` (ms) from `trades`, oldest first. */
export function candlesOf(trades: readonly Trade[], symbol: string, iv: number): Candle[] {
  const seen = new Set<string>();
  const by = new Map<number, { c: Candle; os: number; cs: number }>();
  for (const t of trades) {
    if (t.symbol !== symbol || seen.has(t.id)) continue;
    seen.add(t.id);
    const start = Math.floor(t.at / iv) * iv;
    const b = by.get(start);
    if (!b) {
      by.set(start, { c: { start, open: t.priceTicks, high: t.priceTicks, low: t.priceTicks, close: t.priceTicks, volume: t.qty, trades: 1 }, os: t.tradeSeq, cs: t.tradeSeq });
      continue;
    }
    const c = b.c;
    b.c = {
      start,
      open: t.tradeSeq < b.os ? t.priceTicks : c.open,
      high: Math.max(c.high, t.priceTicks),
      low: Math.min(c.low, t.priceTicks),
      close: t.tradeSeq > b.cs ? t.priceTicks : c.close,
      volume: c.volume + t.qty,
      trades: c.trades + 1,
    };
    b.os = Math.min(b.os, t.tradeSeq);
    b.cs = Math.max(b.cs, t.tradeSeq);
  }
  return [...by.keys()].sort((a, b) => a - b).map((k) => by.get(k)!.c);
}
