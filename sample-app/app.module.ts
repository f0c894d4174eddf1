import { hostname } from 'node:os';
import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { EchoMqEmbeddedServer, EchoMqExceptionFilter, EchoMqModule } from '@echomq/nestjs';
import { AccountsController } from './accounts/accounts.controller.js';
import { PositionsService } from './accounts/positions.service.js';
import { SETTLEMENTS_QUEUE } from './exchange.names.js';
import { MarketController } from './market/market.controller.js';
import { MarketData } from './market/market-data.js';
import { BookHolder } from './matching/book-holder.js';
import { IntakeProcessor } from './orders/intake.processor.js';
import { OrderEntryService } from './orders/order-entry.service.js';
import { OrdersController } from './orders/orders.controller.js';
import { SettlementProcessor } from './settlement/settlement.processor.js';
import { ExchangeStore, STORE_URL } from './store/exchange.store.js';
import { INSTANCE_NAME, PageController } from './web/page.controller.js';
import { StatsController } from './web/stats.controller.js';

/** Options of `AppModule.forRoot`. */
export interface AppOptions {
  /**
   * The Valkey to use, `redis://host:port` (EchoMQ and the exchange's own store). Unset: the
   * EchoMQ module's embedded default (a throwaway valkey-server it starts and stops), which the
   * store then uses too.
   */
  readonly url?: string;
  /** How long shutdown waits for running handlers (ms). Default 1500. */
  readonly shutdownTimeoutMs?: number;
  /**
   * Job lease (ms) of the order, fill and settlement queues: a dead instance's in-flight jobs are
   * re-delivered this long after it died (plus a reaper tick). Default 5000.
   */
  readonly leaseMs?: number;
  /** This instance's name on the page. Default `<hostname>-<pid>`. */
  readonly instance?: string;
}

/**
 * The sample exchange: order entry, the book holders (matching), settlement flows, market data
 * on the Bus, cached positions and the page, on EchoMQ over one Valkey.
 */
@Module({})
export class AppModule {
  /** Builds the application for one Valkey URL. */
  static forRoot(options: AppOptions): DynamicModule {
    const providers: Provider[] = [
      {
        provide: STORE_URL,
        inject: [{ token: EchoMqEmbeddedServer, optional: true }],
        useFactory: (embedded: EchoMqEmbeddedServer | null) => options.url ?? embedded?.url,
      },
      { provide: INSTANCE_NAME, useValue: options.instance ?? `${hostname()}-${process.pid}` },
      ExchangeStore,
      OrderEntryService,
      IntakeProcessor,
      BookHolder,
      PositionsService,
      SettlementProcessor,
      MarketData,
      { provide: APP_FILTER, useClass: EchoMqExceptionFilter },
    ];
    return {
      module: AppModule,
      imports: [
        EchoMqModule.forRoot({
          connection: options.url ? { url: options.url } : { embedded: true },
          shutdownTimeoutMs: options.shutdownTimeoutMs ?? 1500,
          defaults: { leaseMs: options.leaseMs ?? 5000 },
          // Settlement rows are kept for inspection (GET of a settlement job, the tests).
          queues: { [SETTLEMENTS_QUEUE]: { keepDone: 100_000 } },
        }),
      ],
      controllers: [OrdersController, AccountsController, MarketController, PageController, StatsController],
      providers,
    };
  }
}
