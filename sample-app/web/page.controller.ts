import { Controller, Get, Header, Inject } from '@nestjs/common';
import { EXCHANGE_CONFIG, type ExchangeConfig } from '../config/exchange.config.js';
import { MarketData } from '../market/market-data.js';
import { BookHolder } from '../matching/book-holder.js';
import { ExchangeStore, type Candle } from '../store/exchange.store.js';
import { renderPage } from './page.render.js';

/** The injection token of this instance's display name. */
export const INSTANCE_NAME = Symbol('INSTANCE_NAME');

/** How many symbols' 1 s candles the page shows (those of the newest trades). */
const CANDLE_SYMBOLS = 8;

/**
 * `GET /`: the books of the listed symbols, recent trades, 1 s candles of the symbols traded last
 * and the minutes sealed last, so a person can watch it work. Its size is bounded by the listed
 * symbols, whatever anyone sends.
 */
@Controller()
export class PageController {
  constructor(
    private readonly market: MarketData,
    private readonly store: ExchangeStore,
    private readonly holder: BookHolder,
    @Inject(INSTANCE_NAME) private readonly instance: string,
    @Inject(EXCHANGE_CONFIG) private readonly config: ExchangeConfig,
  ) {}

  /** The page. */
  @Get()
  @Header('content-type', 'text/html; charset=utf-8')
  async page(): Promise<string> {
    const [books, trades, sealed] = await Promise.all([this.store.depths(this.config.symbols), this.market.recent(25), this.market.recentSealed(10)]);
    const candles: Record<string, Candle[]> = {};
    const traded = [...new Set(trades.map((t) => t.symbol))].filter((s) => this.config.symbols.includes(s)).slice(0, CANDLE_SYMBOLS).sort();
    await Promise.all(traded.map(async (s) => (candles[s] = await this.store.candles(s, 1000, 10))));
    return renderPage({ instance: this.instance, heldShards: this.holder.held(), books, trades, candles, sealed });
  }
}
