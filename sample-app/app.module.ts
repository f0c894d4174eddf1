import { hostname } from 'node:os';
import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { EchoMqDashboardModule, EchoMqEmbeddedServer, EchoMqModule, metricsController, type BusEvent, type EchoMqModuleOptions } from '@echomq/nestjs';
import { AccountsController } from './accounts/accounts.controller.js';
import { OpeningBalances } from './accounts/opening-balances.service.js';
import { ReservationSweeper } from './accounts/reservation-sweeper.processor.js';
import { PositionsService } from './accounts/positions.service.js';
import { EXCHANGE_CONFIG, loadExchangeConfig, type ExchangeConfig } from './config/exchange.config.js';
import { BOOKS_CHANGED_TOPIC, ORDERS_QUEUE, SETTLEMENTS_QUEUE } from './exchange.names.js';
import { CandleSealStore } from './market/candle-seal.store.js';
import { CandleSealer } from './market/candle-sealer.processor.js';
import { booksTagsOf, type DepthChanged } from './market/market.events.js';
import { MarketController } from './market/market.controller.js';
import { MarketData } from './market/market-data.js';
import { BookHolder } from './matching/book-holder.js';
import { DEFAULT_MATCHING, MATCHING_OPTIONS, type MatchingOptions } from './matching/matching.options.js';
import { IntakeProcessor } from './orders/intake.processor.js';
import { OrderEntryService } from './orders/order-entry.service.js';
import { OrdersController } from './orders/orders.controller.js';
import { SettlementProcessor } from './settlement/settlement.processor.js';
import { ExchangeStore, STORE_URL } from './store/exchange.store.js';
import { INSTANCE_NAME, PageController } from './web/page.controller.js';
import { StatsController } from './web/stats.controller.js';
import { StoreUnavailableFilter } from './web/store-unavailable.filter.js';
import { AdminGuard } from './web/admin.guard.js';
import { HealthController } from './web/health.controller.js';

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
  /** The book holders' leases, snapshots and log retention (defaults: `DEFAULT_MATCHING`). */
  readonly matching?: Partial<MatchingOptions>;
  /** The exchange's configuration (symbols, accounts, risk switches). Default: `loadExchangeConfig()` (env `EXCHANGE_CONFIG`, `EXCHANGE_SECRET`). */
  readonly config?: ExchangeConfig;
  /**
   * Builds the module that runs EchoMQ from its options. Default `EchoMqModule.forRoot`; the
   * exchange's tests pass `EchoMqTestingModule.forRoot` (from `@echomq/nestjs/testing`).
   */
  readonly echoMq?: (options: EchoMqModuleOptions) => DynamicModule;
}

/**
 * The sample exchange: order entry, the book holders (matching), settlement flows, market data
 * on the Bus, cached positions and the page, on EchoMQ over one Valkey.
 */
@Module({})
export class AppModule {
  /** Builds the application for one Valkey URL. */
  static forRoot(options: AppOptions): DynamicModule {
    const config = options.config ?? loadExchangeConfig();
    const providers: Provider[] = [
      {
        provide: STORE_URL,
        inject: [{ token: EchoMqEmbeddedServer, optional: true }],
        useFactory: (embedded: EchoMqEmbeddedServer | null) => options.url ?? embedded?.url,
      },
      { provide: INSTANCE_NAME, useValue: options.instance ?? `${hostname()}-${process.pid}` },
      { provide: EXCHANGE_CONFIG, useValue: config },
      ExchangeStore,
      OrderEntryService,
      IntakeProcessor,
      { provide: MATCHING_OPTIONS, useValue: { ...DEFAULT_MATCHING, ...options.matching } },
      BookHolder,
      PositionsService,
      OpeningBalances,
      ReservationSweeper,
      SettlementProcessor,
      MarketData,
      CandleSealStore,
      CandleSealer,
      // EchoMQ errors as EchoMqExceptionFilter answers them, the store's outages as 503 (both Retry-After: 1).
      { provide: APP_FILTER, useClass: StoreUnavailableFilter },
    ];
    return {
      module: AppModule,
      imports: [
        (options.echoMq ?? ((o: EchoMqModuleOptions) => EchoMqModule.forRoot(o)))({
          connection: options.url ? { url: options.url } : { embedded: true },
          shutdownTimeoutMs: options.shutdownTimeoutMs ?? 1500,
          defaults: { leaseMs: options.leaseMs ?? 5000 },
          // Settlement rows are kept for inspection (GET of a settlement job, the tests).
          queues: { [SETTLEMENTS_QUEUE]: { keepDone: 100_000 } },
          // The books pages (GET /market/books…) are dropped on every instance by each depth change a holder publishes.
          cache: { invalidateOn: [{ topic: BOOKS_CHANGED_TOPIC, tags: (e: BusEvent<DepthChanged>) => booksTagsOf(e.payload), ackTimeoutMs: 5000 }] },
        }),
        // The typed handle of the orders queue (order entry injects Queue<Command, Sequenced>).
        EchoMqModule.forFeature([{ name: ORDERS_QUEUE }]),
        // The dashboard, for the operator only (the admin key; a browser: ?key= once, then a cookie).
        EchoMqDashboardModule.register({ path: '/admin/queues', guard: new AdminGuard(config) }),
      ],
      controllers: [OrdersController, AccountsController, MarketController, PageController, StatsController, HealthController, metricsController({ guards: [AdminGuard] })],
      providers,
    };
  }
}
