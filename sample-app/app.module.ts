import { Inject, Injectable, Module, type DynamicModule, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { EchoMqConnection } from '@echomq/nestjs/protocol';
import { EchoMqModule } from '@echomq/nestjs';
import { EchoMqHttpFilter } from './echomq-http.filter.js';
import { OrderBooks } from './orders/order-book.js';
import { OrdersController } from './orders/orders.controller.js';
import { OrdersProcessor } from './orders/orders.processor.js';

/** Options of `AppModule.forRoot`. */
export interface AppOptions {
  /** The Valkey to use, `redis://host:port`. */
  readonly url: string;
  /**
   * Runs at shutdown once the EchoMQ connection is closed, e.g. to stop an embedded
   * valkey-server that the connection talks to.
   */
  readonly afterClose?: () => Promise<void>;
  /** How long shutdown waits for running order handlers (ms). Default 5000. */
  readonly shutdownTimeoutMs?: number;
}

const AFTER_CLOSE = Symbol('AFTER_CLOSE');

/**
 * Runs `AppOptions.afterClose` at shutdown. EchoMQ closes its connection in its own
 * `onApplicationShutdown`, but its module is global and Nest runs global modules' shutdown hooks
 * after the application's, so this closes the connection first (EchoMQ's later close is then a
 * no-op) instead of pulling Valkey from under a live connection.
 */
@Injectable()
export class AfterEchoMqClose implements OnApplicationShutdown {
  constructor(
    @Inject(AFTER_CLOSE) private readonly afterClose: () => Promise<void>,
    private readonly conn: EchoMqConnection,
  ) {}

  /** Closes the connection, then runs the callback. */
  async onApplicationShutdown(): Promise<void> {
    await this.conn.close();
    await this.afterClose();
  }
}

/**
 * The sample application: the orders HTTP API, the `orders` processor and its in-memory order
 * books, EchoMQ on the given Valkey, and the EchoMQ → HTTP error filter.
 */
@Module({})
export class AppModule {
  /** Builds the application for one Valkey URL. */
  static forRoot(options: AppOptions): DynamicModule {
    const providers: Provider[] = [
      OrderBooks,
      OrdersProcessor,
      { provide: APP_FILTER, useClass: EchoMqHttpFilter },
    ];
    if (options.afterClose) providers.push({ provide: AFTER_CLOSE, useValue: options.afterClose }, AfterEchoMqClose);
    return {
      module: AppModule,
      imports: [
        EchoMqModule.forRoot({
          connection: { url: options.url },
          shutdownTimeoutMs: options.shutdownTimeoutMs ?? 5000,
        }),
      ],
      controllers: [OrdersController],
      providers,
    };
  }
}
