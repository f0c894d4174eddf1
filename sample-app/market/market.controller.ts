import { BadRequestException, Controller, Get, Inject, NotFoundException, Param, Post, Query, UseInterceptors } from '@nestjs/common';
import { CacheInterceptor, CacheScope, type HttpRequestLike } from '@echomq/nestjs';
import { EXCHANGE_CONFIG, type ExchangeConfig } from '../config/exchange.config.js';
import type { Depth, DepthLevel, Trade } from '../engine/engine.types.js';
import { formatUnits, ticksFromWire } from '../engine/money.js';
import { CANDLE_INTERVALS, ExchangeStore, type Candle } from '../store/exchange.store.js';
import { CandleSealStore } from './candle-seal.store.js';
import { BOOKS_TAG, bookTag, type SealedCandle } from './market.events.js';
import { MarketData } from './market-data.js';

const INTERVALS: Readonly<Record<string, number>> = { '1s': 1000, '1m': 60_000 };
const SYMBOL_RE = /^[A-Z][A-Z0-9.]{0,11}$/;
/**
 * How long a books page may be served from the cache: a safety net only. Depth changes reach it
 * as `books.changed` events (cache `invalidateOn`, app.module.ts), which drop it at once.
 */
export const BOOKS_TTL_MS = 60_000;

/** The problems of a symbol in a path (none when well-formed). */
const symbolProblems = (symbol: string): string[] =>
  SYMBOL_RE.test(symbol) ? [] : [`symbol must be 1-12 uppercase letters, digits or "."; got ${JSON.stringify(symbol.slice(0, 40))}`];

/** Refuses a request with 400 listing every problem, if there are any. */
function refuse(problems: readonly string[]): void {
  if (problems.length > 0) throw new BadRequestException({ statusCode: 400, error: 'Bad Request', message: problems.join('; '), problems });
}

/** Ticks (a decimal string) as a decimal string of units. */
const units = (ticks: string): string => formatUnits(ticksFromWire(ticks));

/** A trade with its price and notional in units (decimal strings), for the API. */
export const tradeView = (t: Trade) => ({ ...t, price: units(t.priceTicks), notional: units(t.notionalTicks), at: new Date(t.at).toISOString() });

/** A candle with prices and notional in units (decimal strings), for the API. */
export const candleView = (c: Candle) => ({
  start: new Date(c.start).toISOString(),
  open: units(c.open),
  high: units(c.high),
  low: units(c.low),
  close: units(c.close),
  volume: c.volume,
  notional: units(c.notionalTicks),
  trades: c.trades,
});

/** A sealed minute candle for the API: the candle, and when it was sealed. */
export const sealedView = (c: SealedCandle) => ({ symbol: c.symbol, ...candleView(c), sealedAt: new Date(c.sealedAt).toISOString() });

const levelView = (l: DepthLevel) => ({ price: units(l.priceTicks), qty: l.qty, orders: l.orders });

/** A depth snapshot with prices in units (decimal strings), for the API. */
export const depthView = (d: Depth) => ({ symbol: d.symbol, bids: d.bids.map(levelView), asks: d.asks.map(levelView) });

/** The tags of a symbol's book page (a malformed symbol, answered 400, gets only the books tag). */
const bookPageTags = (req: HttpRequestLike): string[] => {
  const s = req.params?.symbol ?? '';
  return SYMBOL_RE.test(s) ? [BOOKS_TAG, bookTag(s)] : [BOOKS_TAG];
};

/**
 * Market data over HTTP (public): books, recent trades, candles (live and sealed), and a rebuild
 * of the projections by replay. Only listed symbols (`ExchangeConfig.symbols`) are served.
 */
@Controller('market')
export class MarketController {
  constructor(
    private readonly market: MarketData,
    private readonly store: ExchangeStore,
    private readonly seals: CandleSealStore,
    @Inject(EXCHANGE_CONFIG) private readonly config: ExchangeConfig,
  ) {}

  /**
   * Every listed symbol's top 10 levels. Cached in the coherent cache under the tag
   * `market.books`, which each `books.changed` event invalidates on every instance.
   */
  @Get('books')
  @UseInterceptors(CacheInterceptor)
  @CacheScope('public', { ttlMs: BOOKS_TTL_MS, tags: [BOOKS_TAG] })
  async books(): Promise<ReturnType<typeof depthView>[]> {
    return (await this.store.depths(this.config.symbols)).map(depthView);
  }

  /** One listed symbol's top 10 levels, cached like `books` under `market.book.<symbol>` too. */
  @Get('books/:symbol')
  @UseInterceptors(CacheInterceptor)
  @CacheScope('public', { ttlMs: BOOKS_TTL_MS, tags: bookPageTags })
  async book(@Param('symbol') symbol: string): Promise<ReturnType<typeof depthView>> {
    refuse(symbolProblems(symbol));
    this.listed(symbol);
    const [d] = await this.store.depths([symbol]);
    return depthView(d ?? { symbol, bids: [], asks: [] });
  }

  /** The newest trades (from the `trades` log), newest first; `?count=` 1..1000, default 20. */
  @Get('trades')
  async trades(@Query('count') count?: string): Promise<ReturnType<typeof tradeView>[]> {
    const n = count === undefined ? 20 : Number(count);
    if (!Number.isInteger(n) || n < 1 || n > 1000) throw new BadRequestException('count must be an integer in 1..1000');
    return (await this.market.recent(n)).map(tradeView);
  }

  /** A listed symbol's candles, `?interval=1s|1m` (default 1s), oldest first. */
  @Get('candles/:symbol')
  async candles(@Param('symbol') symbol: string, @Query('interval') interval = '1s'): Promise<ReturnType<typeof candleView>[]> {
    const iv = INTERVALS[interval];
    const problems = [
      ...symbolProblems(symbol),
      ...(iv === undefined || !(CANDLE_INTERVALS as readonly number[]).includes(iv) ? [`interval must be "1s" or "1m"; got ${JSON.stringify(interval)}`] : []),
    ];
    refuse(problems);
    this.listed(symbol);
    return (await this.store.candles(symbol, iv, 120)).map(candleView);
  }

  /** A listed symbol's sealed minute candles (by the `seal-1m` schedule), oldest first; `?count=` 1..1440, default 60. */
  @Get('candles/:symbol/sealed')
  async sealed(@Param('symbol') symbol: string, @Query('count') count?: string): Promise<ReturnType<typeof sealedView>[]> {
    const n = count === undefined ? 60 : Number(count);
    const problems = [
      ...symbolProblems(symbol),
      ...(Number.isInteger(n) && n >= 1 && n <= 1440 ? [] : [`count must be an integer in 1..1440; got ${JSON.stringify(count)}`]),
    ];
    refuse(problems);
    this.listed(symbol);
    return (await this.seals.sealed(symbol, n)).map(sealedView);
  }

  /** Replays the trade log from `?from=<ISO instant>` through the candle and risk folds. */
  @Post('rebuild')
  async rebuild(@Query('from') from?: string): Promise<{ replayed: number }> {
    const at = new Date(from ?? '');
    if (from === undefined || Number.isNaN(at.getTime())) throw new BadRequestException('from must be an ISO instant');
    return { replayed: await this.market.rebuild(at) };
  }

  /** 404 unless `symbol` is listed. */
  private listed(symbol: string): void {
    if (!this.config.symbols.includes(symbol)) throw new NotFoundException(`symbol ${symbol} is not listed`);
  }
}
