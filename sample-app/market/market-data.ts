import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { BusService, OnEvent, type BusEvent } from '@echomq/nestjs';
import type { Trade } from '../engine/engine.types.js';
import { BOOKS_CHANGED_TOPIC, CANDLES_CLOSED_TOPIC, TRADES_TOPIC } from '../exchange.names.js';
import { ExchangeStore } from '../store/exchange.store.js';
import { BOOKS_CHANGED_RETENTION, TRADES_RETENTION, type SealedCandle } from './market.events.js';

/** The consumer group (on `trades`) that folds the candles. */
export const CANDLES_GROUP = 'candles';

/** A dead member's unacknowledged trades are re-delivered to a live one after this long (ms). */
export const ACK_TIMEOUT_MS = 5000;

/**
 * Market data from the `trades` topic. Two consumer groups, each shared by all instances (the
 * Bus splits the entries among the members and re-delivers those of a dead member): `candles`
 * folds each trade into its symbol's 1 s and 1 min candles, `risk` into both accounts' exposure.
 * Both folds are idempotent per trade id, so a re-delivered or twice-published trade counts once,
 * and the order trades arrive in does not matter. A group keeps its position across restarts;
 * `rebuild(from)` replays the log from an instant through the same folds (e.g. after losing the
 * projections). It also bounds the `trades` log and the `books.changed` log (signals for the books cache).
 */
@Injectable()
export class MarketData implements OnApplicationBootstrap {
  constructor(
    private readonly bus: BusService,
    private readonly store: ExchangeStore,
  ) {}

  /** Sets the retention of `trades` and `books.changed` (every instance sets the same policies). */
  async onApplicationBootstrap(): Promise<void> {
    await this.bus.setRetention(TRADES_TOPIC, TRADES_RETENTION);
    await this.bus.setRetention(BOOKS_CHANGED_TOPIC, BOOKS_CHANGED_RETENTION);
  }

  /** Folds a trade into the candles. */
  @OnEvent(TRADES_TOPIC, { group: CANDLES_GROUP, concurrency: 16, ackTimeoutMs: ACK_TIMEOUT_MS })
  async candle(e: BusEvent<Trade>): Promise<void> {
    await this.store.foldCandle(e.payload);
  }

  /** Folds a trade into the risk view. */
  @OnEvent(TRADES_TOPIC, { group: 'risk', concurrency: 16, ackTimeoutMs: ACK_TIMEOUT_MS })
  async risk(e: BusEvent<Trade>): Promise<void> {
    await this.store.foldRisk(e.payload);
  }

  /** Replays the trade log from `from` (to now) through both folds; resolves to how many trades it read. */
  async rebuild(from: Date): Promise<number> {
    let n = 0;
    for await (const e of this.bus.replay<Trade>(TRADES_TOPIC, { from, batch: 500 })) {
      await Promise.all([this.store.foldCandle(e.payload), this.store.foldRisk(e.payload)]);
      n++;
    }
    return n;
  }

  /** The newest trades, newest first (read back from the Bus log). */
  async recent(count = 20): Promise<Trade[]> {
    const out: Trade[] = [];
    for await (const e of this.bus.replay<Trade>(TRADES_TOPIC, { order: 'desc', batch: Math.min(count, 1000) })) {
      out.push(e.payload);
      if (out.length >= count) break;
    }
    return out;
  }

  /** The newest sealed minute candles (read back from the `candles.closed` log), newest first, each (symbol, minute) once. */
  async recentSealed(count = 10): Promise<SealedCandle[]> {
    const out = new Map<string, SealedCandle>();
    for await (const e of this.bus.replay<SealedCandle>(CANDLES_CLOSED_TOPIC, { order: 'desc', batch: Math.min(count * 2, 1000) })) {
      const k = `${e.payload.symbol} ${e.payload.start}`;
      if (!out.has(k)) out.set(k, e.payload);
      if (out.size >= count) break;
    }
    return [...out.values()];
  }
}
