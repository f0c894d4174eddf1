import { Controller, Get, Inject } from '@nestjs/common';
import { QueueService } from '@echomq/nestjs';
import { ORDERS_QUEUE } from '../exchange.names.js';
import { ExchangeStore } from '../store/exchange.store.js';
import { INSTANCE_NAME } from './page.controller.js';

/**
 * `GET /health` (public): 200 `{ status: 'ok', instance }` when this instance reaches its store and
 * EchoMQ; while Valkey is down, 503 with `Retry-After: 1` (web/store-unavailable.filter.ts). For a
 * load balancer's health check and the restart recipes.
 */
@Controller('health')
export class HealthController {
  constructor(
    private readonly store: ExchangeStore,
    private readonly queues: QueueService,
    @Inject(INSTANCE_NAME) private readonly instance: string,
  ) {}

  /** Pings the store and reads a queue's counts (either fails → 503). */
  @Get()
  async health(): Promise<{ status: 'ok'; instance: string }> {
    await Promise.all([this.store.client.ping(), this.queues.counts(ORDERS_QUEUE)]);
    return { status: 'ok', instance: this.instance };
  }
}
