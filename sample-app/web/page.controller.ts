import { Controller, Get, Header, Inject } from '@nestjs/common';
import { MarketData } from '../market/market-data.js';
import { BookHolder } from '../matching/book-holder.js';
import { ExchangeStore, type Candle } from '../store/exchange.store.js';
import { renderPage } from './page.render.js';

/** The injection token of this instance's display name. */
export const INSTANCE_NAME = Symbol('INSTANCE_NAME');

/** `GET /`: the order books, recent trades and 1 s candles, so a person can watch it work. */
@Controller()
export class PageController {
  constructor(
    private readonly market: MarketData,
    private readonly store: ExchangeStore,
    private readonly holder: BookHolder,
    @Inject(INSTANCE_NAME) private readonly instance: string,
  ) {}

  /** The page. */
  @Get()
  @Header('content-type', 'text/html; charset=utf-8')
  async page(): Promise<string> {
    const [books, trades] = await Promise.all([this.store.depths(), this.market.recent(25)]);
    const candles: Record<string, Candle[]> = {};
    await Promise.all(books.map(async (b) => (candles[b.symbol] = await this.store.candles(b.symbol, 1000, 10))));
    return renderPage({ instance: this.instance, heldShards: this.holder.held(), books, trades, candles });
  }
}
