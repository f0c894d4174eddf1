import { BadRequestException, Controller, Get, Query } from '@nestjs/common';
import { QueueService } from '@echomq/nestjs';
import { SHARDS } from '../engine/ids.js';
import { FILLS_QUEUE, ORDERS_QUEUE, SETTLEMENTS_QUEUE } from '../exchange.names.js';
import { ExchangeStore } from '../store/exchange.store.js';

/** The reply of `GET /stats`. */
export interface ExchangeStats {
  /** Commands matched so far (Σ over shards of the cursor + 1). */
  readonly sequenced: number;
  /** Trades the ledger settled. */
  readonly settled: number;
  /** Jobs not finished yet (pending + active + scheduled), per queue. */
  readonly backlog: Record<string, number>;
  /** Trade → settled latency (ms) over the newest `last` settlements. */
  readonly latency: { readonly n: number; readonly p50?: number; readonly p99?: number };
}

/** The `q` quantile (0..1) of sorted values, nearest rank. */
export function quantile(sorted: readonly number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** Counters for the load script and operators. */
@Controller('stats')
export class StatsController {
  constructor(
    private readonly queues: QueueService,
    private readonly store: ExchangeStore,
  ) {}

  /** Progress counters; `?last=N` (1..100,000, default 1000) bounds the latency sample. */
  @Get()
  async stats(@Query('last') last = '1000'): Promise<ExchangeStats> {
    const n = Number(last);
    if (!Number.isInteger(n) || n < 1 || n > 100_000) throw new BadRequestException('last must be an integer in 1..100000');
    const cursors = await Promise.all(Array.from({ length: SHARDS }, (_, s) => this.store.cursor(s)));
    const backlog: Record<string, number> = {};
    for (const q of [ORDERS_QUEUE, FILLS_QUEUE, SETTLEMENTS_QUEUE]) {
      const c = await this.queues.counts(q);
      backlog[q] = c.pending + c.active + c.scheduled;
    }
    const lat = (await this.store.latencies(n)).sort((a, b) => a - b);
    return {
      sequenced: cursors.reduce((s, c) => s + c + 1, 0),
      settled: await this.store.settledCount(),
      backlog,
      latency: { n: lat.length, p50: quantile(lat, 0.5), p99: quantile(lat, 0.99) },
    };
  }
}
