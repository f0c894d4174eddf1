import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { BusAdmin, BusService, EchoMqError, Processor, type Job } from '@echomq/nestjs';
import { EXCHANGE_CONFIG, type ExchangeConfig } from '../config/exchange.config.js';
import { CANDLES_CLOSED_TOPIC, CANDLES_QUEUE, TRADES_TOPIC } from '../exchange.names.js';
import { ExchangeStore } from '../store/exchange.store.js';
import { CandleSealStore } from './candle-seal.store.js';
import { CANDLES_CLOSED_RETENTION, type SealedCandle } from './market.events.js';
import { CANDLES_GROUP } from './market-data.js';

/** The schedule's name in the `candles` queue. */
export const SEAL_SCHEDULE = 'seal-1m';
/** Every minute at second 15 (croner, seconds first): the minute that just ended has had 15 s to be folded. */
export const SEAL_CRON = '15 * * * * *';
/** A minute is sealed once it has been closed this long (ms): more than the market-data ack timeout (5 s), so a re-delivered trade is folded first. */
export const SEAL_LAG_MS = 10_000;
/** How far back a seal job looks for unsealed minutes (ms): a job missed for up to an hour is caught up. */
export const SEAL_LOOKBACK_MS = 3_600_000;
/** How long a sealer holds the announcement of a minute (ms): one that dies leaves it to the next job after this. */
const ANNOUNCE_CLAIM_MS = 30_000;
const MINUTE = 60_000;

/** What one seal job did. */
export type SealReport = { readonly sealed: number; readonly announced: number };

/**
 * Minute candles sealed by a stored schedule. `@Processor`'s `schedules` upserts `seal-1m` at
 * bootstrap on every instance (the same declaration: unchanged), and the schedule loop turns each
 * tick into exactly one job fleet-wide. The job seals every closed minute of every listed symbol
 * (closed for `SEAL_LAG_MS`, within the last hour, and the `candles` group handed every trade
 * published up to then: a backlog defers the minute to a later tick) into an immutable record,
 * idempotent per (symbol, minute) — `SET NX`, so a retried, run-now or concurrent job finds it
 * sealed — and publishes it on `candles.closed` under a 30 s claim (`SET NX PX`), so once; again
 * only if the claimant died before it marked the minute announced: at least once, never lost.
 */
@Injectable()
export class CandleSealer implements OnApplicationBootstrap {
  private readonly log = new Logger('CandleSealer');

  constructor(
    private readonly store: ExchangeStore,
    private readonly seals: CandleSealStore,
    private readonly bus: BusService,
    private readonly busAdmin: BusAdmin,
    @Inject(EXCHANGE_CONFIG) private readonly config: ExchangeConfig,
  ) {}

  /** Bounds the `candles.closed` log. */
  async onApplicationBootstrap(): Promise<void> {
    await this.bus.setRetention(CANDLES_CLOSED_TOPIC, CANDLES_CLOSED_RETENTION);
  }

  /** One tick of the schedule (or a run-now): seals what is closed. */
  @Processor(CANDLES_QUEUE, { concurrency: 1, schedules: [{ name: SEAL_SCHEDULE, cron: SEAL_CRON, missed: 'once', attempts: 5 }] })
  async seal(job: Job<null>): Promise<SealReport> {
    const report = await this.sealClosed(Date.now());
    if (report.sealed > 0) this.log.log(`job ${job.id}: sealed ${report.sealed} minute candle(s), announced ${report.announced}`);
    return report;
  }

  /** Seals and announces every minute of every listed symbol closed at `now` (and not yet announced). */
  async sealClosed(now: number): Promise<SealReport> {
    let sealed = 0;
    let announced = 0;
    const since = now - SEAL_LOOKBACK_MS;
    const cut = Math.min(now, await this.foldedUntil(now));
    for (const symbol of this.config.symbols) {
      const [candles, done] = await Promise.all([this.store.candles(symbol, MINUTE, SEAL_LOOKBACK_MS / MINUTE + 1), this.seals.announced(symbol, since)]);
      for (const c of candles) {
        if (c.start < since || c.start + MINUTE + SEAL_LAG_MS > cut || done.has(c.start)) continue;
        const { record, created } = await this.seals.seal({ ...c, symbol, interval: '1m', sealedAt: now });
        if (created) sealed++;
        // Another sealer is announcing it right now: leave that to it.
        if (!(await this.seals.claimAnnouncement(symbol, c.start, ANNOUNCE_CLAIM_MS))) continue;
        await this.bus.publish<SealedCandle>(CANDLES_CLOSED_TOPIC, record);
        await this.seals.markAnnounced(symbol, c.start);
        announced++;
      }
    }
    return { sealed, announced };
  }

  /**
   * The instant up to which the `candles` group has been handed every trade published: `now`
   * when it has no lag, else the publish time of the last entry it was handed (its in-flight
   * entries are not counted: they are folded within ms, or re-delivered after the 5 s ack timeout).
   */
  private async foldedUntil(now: number): Promise<number> {
    // No trade was ever published: nothing is folded, nothing waits.
    const groups = await this.busAdmin.groups(TRADES_TOPIC).catch((err: unknown) => {
      if (err instanceof EchoMqError && err.code === 'EMQ_NOT_FOUND') return [];
      throw err;
    });
    const g = groups.find((x) => x.name === CANDLES_GROUP);
    if (!g || g.lag === 0) return now;
    if (!g.lastDeliveredId) return 0;
    for await (const e of this.bus.replay(TRADES_TOPIC, { from: g.lastDeliveredId, to: g.lastDeliveredId, batch: 1 })) return e.at.getTime();
    return now;
  }
}
