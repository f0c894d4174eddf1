import { Injectable } from '@nestjs/common';
import { ExchangeStore } from '../store/exchange.store.js';
import type { SealedCandle } from './market.events.js';

/** How long sealed minute candles are kept (7 days), records and index alike. */
export const SEALED_TTL_MS = 7 * 86_400_000;

const K = {
  record: (symbol: string, start: number) => `x:{md:${symbol}}:sealed:${start}`,
  announced: (symbol: string) => `x:{md:${symbol}}:sealed-index`,
  announcing: (symbol: string, start: number) => `x:{md:${symbol}}:announcing:${start}`,
};

/**
 * Sealed minute candles in the exchange's store: one immutable record per (symbol, minute),
 * written once (`SET NX`), and an index of the minutes whose `candles.closed` event went out. In
 * the symbol's slot, next to its live candles.
 */
@Injectable()
export class CandleSealStore {
  constructor(private readonly store: ExchangeStore) {}

  /**
   * Seals `candle` unless its minute is sealed already; resolves to the stored record (the first
   * one written, whichever sealer wrote it) and whether this call wrote it.
   */
  async seal(candle: SealedCandle): Promise<{ record: SealedCandle; created: boolean }> {
    const json = JSON.stringify(candle);
    const old = await this.store.client.set(K.record(candle.symbol, candle.start), json, 'PX', SEALED_TTL_MS, 'NX', 'GET');
    return old === null ? { record: candle, created: true } : { record: JSON.parse(old) as SealedCandle, created: false };
  }

  /**
   * Claims the announcement of (symbol, start) for `ms`: true for the one caller that may publish
   * it now. A claimant that dies before it marks the minute announced leaves the claim to expire,
   * and the next seal job claims it again.
   */
  async claimAnnouncement(symbol: string, start: number, ms: number): Promise<boolean> {
    return (await this.store.client.set(K.announcing(symbol, start), '1', 'PX', ms, 'NX')) === 'OK';
  }

  /** Records that the `candles.closed` event of (symbol, start) went out; prunes entries past the TTL. */
  async markAnnounced(symbol: string, start: number): Promise<void> {
    const idx = K.announced(symbol);
    await this.store.client.multi().zadd(idx, start, String(start)).zremrangebyscore(idx, '-inf', Date.now() - SEALED_TTL_MS).exec();
  }

  /** The minute starts of `symbol` announced at or after `since`. */
  async announced(symbol: string, since: number): Promise<Set<number>> {
    return new Set((await this.store.client.zrangebyscore(K.announced(symbol), since, '+inf')).map(Number));
  }

  /** The newest `count` sealed (and announced) minutes of `symbol`, oldest first. */
  async sealed(symbol: string, count = 60): Promise<SealedCandle[]> {
    const starts = (await this.store.client.zrevrange(K.announced(symbol), 0, count - 1)).map(Number).reverse();
    if (starts.length === 0) return [];
    const raw = await this.store.client.mget(...starts.map((s) => K.record(symbol, s)));
    return raw.flatMap((r) => (r === null ? [] : [JSON.parse(r) as SealedCandle]));
  }
}
