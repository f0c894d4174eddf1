/**
 * The one place the sample starts and stops an embedded valkey-server (when `ECHOMQ_URL` is not
 * set). Kept apart so it can be swapped for the module's own embedded default in one edit.
 */
import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { EchoMqConnection } from '@echomq/nestjs/protocol';
import { startEmbeddedValkey } from '@echomq/nestjs/testing';
import { ExchangeStore } from './store/exchange.store.js';

/** An embedded server: its URL and an idempotent stop. */
export interface EmbeddedServer {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

/** Starts a throwaway valkey-server on a free loopback port. */
export async function startEmbedded(log: Logger): Promise<EmbeddedServer> {
  const v = await startEmbeddedValkey();
  let stopping: Promise<void> | undefined;
  return {
    url: v.url,
    pid: v.pid,
    stop: () =>
      (stopping ??= v.stop().then(() => log.log(`stopped embedded valkey-server (pid ${v.pid})`))),
  };
}

/** The injection token of the callback run once the connections are closed. */
export const AFTER_CLOSE = Symbol('AFTER_CLOSE');

/**
 * Runs the `afterClose` callback at shutdown (e.g. stopping the embedded server) after closing
 * the store and EchoMQ's connection, instead of pulling Valkey from under live connections
 * (EchoMQ's module is global, and Nest runs global modules' shutdown hooks after the app's).
 */
@Injectable()
export class AfterEchoMqClose implements OnApplicationShutdown {
  constructor(
    @Inject(AFTER_CLOSE) private readonly afterClose: () => Promise<void>,
    private readonly conn: EchoMqConnection,
    private readonly store: ExchangeStore,
  ) {}

  /** Closes the connections, then runs the callback. */
  async onApplicationShutdown(): Promise<void> {
    await this.store.onApplicationShutdown();
    await this.conn.close();
    await this.afterClose();
  }
}
