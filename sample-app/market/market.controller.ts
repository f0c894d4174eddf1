import { BadRequestException, Controller, Get, Param, Post, Query, UseInterceptors } from '@nestjs/common';
import { CacheInterceptor, CacheScope } from '@echomq/nestjs';
import { fromTicks, type Depth, type Trade } from '../engine/engine.types.js';
import { CANDLE_INTERVALS, ExchangeStore, type Candle } from '../store/exchange.store.js';
import { MarketData } from './market-data.js';

const INTERVALS: Readonly<Record<string, number>> = { '1s': 1000, '1m': 60_000 };
const SYMBOL_RE = /^[A-Z][A-Z0-9.]{0,11}$/;

/** A trade with prices in units, for the API. */
export const tradeView = (t: Trade) => ({ ...t, price: fromTicks(t.priceTicks), at: new Date(t.at).toISOString() });

/** A candle with prices in units, for the API. */
export const candleView = (c: Candle) => ({ ...c, start: new Date(c.start).toISOString(), open: fromTicks(c.open), high: fromTicks(c.high), low: fromTicks(c.low), close: fromTicks(c.close) });

/** A depth snapshot with prices in units, for the API. */
export const depthView = (d: Depth) => ({
  symbol: d.symbol,
  bids: d.bids.map((l) => ({ price: fromTicks(l.priceTicks), qty: l.qty, orders: l.orders })),
  asks: d.asks.map((l) => ({ price: fromTicks(l.priceTicks), qty: l.qty, orders: l.orders })),
});

/** Market data over HTTP: books, recent trades, candles, and a rebuild of the projections by replay. */
@Controller('market')
export class MarketController {
  constructor(
    private readonly market: MarketData,
    private readonly store: ExchangeStore,
  ) {}

  /** Every symbol's top 10 levels (public, cached 250 ms by `CacheInterceptor`). */
  @Get('books')
  @UseInterceptors(CacheInterceptor)
  @CacheScope('public', { ttlMs: 250 })
  async books(): Promise<ReturnType<typeof depthView>[]> {
    return (await this.store.depths()).map(depthView);
  }

  /** The newest trades (from the `trades` log), newest first; `?count=` 1..1000, default 20. */
  @Get('trades')
  async trades(@Query('count') count?: string): Promise<ReturnType<typeof tradeView>[]> {
    const n = count === undefined ? 20 : Number(count);
    if (!Number.isInteger(n) || n < 1 || n > 1000) throw new BadRequestException('count must be an integer in 1..1000');
    return (await this.market.recent(n)).map(tradeView);
  }

  /** A symbol's candles, `?interval=1s|1m` (default 1s), oldest first. */
  @Get('candles/:symbol')
  async candles(@Param('symbol') symbol: string, @Query('interval') interval = '1s'): Promise<ReturnType<typeof candleView>[]> {
    const iv = INTERVALS[interval];
    const problems = [
      ...(SYMBOL_RE.test(symbol) ? [] : [`symbol must be 1-12 uppercase letters, digits or "."; got ${JSON.stringify(symbol.slice(0, 40))}`]),
      ...(iv === undefined || !(CANDLE_INTERVALS as readonly number[]).includes(iv) ? [`interval must be "1s" or "1m"; got ${JSON.stringify(interval)}`] : []),
    ];
    if (problems.length > 0) throw new BadRequestException({ statusCode: 400, error: 'Bad Request', message: problems.join('; '), problems });
    return (await this.store.candles(symbol, iv, 120)).map(candleView);
  }

  /** Replays the trade log from `?from=<ISO instant>` through the candle and risk folds. */
  @Post('rebuild')
  async rebuild(@Query('from') from?: string): Promise<{ replayed: number }> {
    const at = new Date(from ?? '');
    if (from === undefined || Number.isNaN(at.getTime())) throw new BadRequestException('from must be an ISO instant');
    return { replayed: await this.market.rebuild(at) };
  }
}
