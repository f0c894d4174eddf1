/**
 * Candles computed from a list of trades, purely: the reference the projection is checked
 * against, and the rule it follows (open/close = the price of the lowest/highest trade number in
 * the bucket, so arrival order does not matter; a trade id counted once). Money is `bigint`
 * here and decimal strings of ticks in the result, so a sum of large notionals is exact.
 */
import type { Trade } from '../engine/engine.types.js';
import { ticksFromWire, ticksToWire } from '../engine/money.js';
import type { Candle } from '../store/exchange.store.js';

/** A bucket being built: prices and notional as bigint ticks, plus the trade numbers of open and close. */
interface Bucket {
  open: bigint;
  high: bigint;
  low: bigint;
  close: bigint;
  volume: number;
  notional: bigint;
  trades: number;
  os: number;
  cs: number;
}

/** The candles of `symbol` at interval `iv` (ms) from `trades`, oldest first. */
export function candlesOf(trades: readonly Trade[], symbol: string, iv: number): Candle[] {
  const seen = new Set<string>();
  const by = new Map<number, Bucket>();
  for (const t of trades) {
    if (t.symbol !== symbol || seen.has(t.id)) continue;
    seen.add(t.id);
    const start = Math.floor(t.at / iv) * iv;
    const p = ticksFromWire(t.priceTicks);
    const n = ticksFromWire(t.notionalTicks);
    const b = by.get(start);
    if (!b) {
      by.set(start, { open: p, high: p, low: p, close: p, volume: t.qty, notional: n, trades: 1, os: t.tradeSeq, cs: t.tradeSeq });
      continue;
    }
    if (t.tradeSeq < b.os) [b.open, b.os] = [p, t.tradeSeq];
    if (t.tradeSeq > b.cs) [b.close, b.cs] = [p, t.tradeSeq];
    if (p > b.high) b.high = p;
    if (p < b.low) b.low = p;
    b.volume += t.qty;
    b.notional += n;
    b.trades++;
  }
  return [...by.keys()]
    .sort((a, b) => a - b)
    .map((start) => {
      const b = by.get(start)!;
      return {
        start,
        open: ticksToWire(b.open),
        high: ticksToWire(b.high),
        low: ticksToWire(b.low),
        close: ticksToWire(b.close),
        volume: b.volume,
        notionalTicks: ticksToWire(b.notional),
        trades: b.trades,
      };
    });
}
