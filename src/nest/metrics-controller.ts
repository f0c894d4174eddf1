import { Controller, Get, Header, UseGuards, type CanActivate, type Type } from '@nestjs/common';
import { EchoMqMetrics } from './metrics-service.js';
import { prometheusContentType } from '../telemetry/prometheus-format.js';

/** Options of `metricsController`. */
export interface MetricsControllerOptions {
  /** The route (default `metrics`). */
  readonly path?: string;
  /** Guards run before each scrape (e.g. a token check), as `@UseGuards` takes them. */
  readonly guards?: readonly (Type<CanActivate> | CanActivate)[];
}

/**
 * A controller class serving `EchoMqMetrics.prometheus()` at `GET /<path>` (default `/metrics`)
 * with the Prometheus content type. Add it to a module's `controllers`:
 * `controllers: [metricsController({ guards: [MyTokenGuard] })]`.
 */
export function metricsController(options: MetricsControllerOptions = {}): Type<unknown> {
  @Controller(options.path ?? 'metrics')
  @UseGuards(...(options.guards ?? []))
  class EchoMqMetricsController {
    constructor(private readonly metrics: EchoMqMetrics) {}

    @Get()
    @Header('Content-Type', prometheusContentType)
    scrape(): Promise<string> {
      return this.metrics.prometheus();
    }
  }
  return EchoMqMetricsController;
}
