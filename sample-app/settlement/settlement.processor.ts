import { Injectable } from '@nestjs/common';
import { FatalJobError, Flow, Processor, type FlowJob, type Job } from '@echomq/nestjs';
import type { Trade } from '../engine/engine.types.js';
import { ticksFromWire, ticksToWire } from '../engine/money.js';
import { FILLS_QUEUE, SETTLEMENTS_QUEUE } from '../exchange.names.js';
import { PositionsService } from '../accounts/positions.service.js';
import { ExchangeStore } from '../store/exchange.store.js';
import type { FillLeg, FillResult } from './settlement.spec-builder.js';

/** Accounts whose name starts with this cannot settle: their fills fail (to show the failure policy). */
export const FROZEN_PREFIX = 'frozen';

/** The result of a settlement step. */
export interface SettlementResult {
  readonly tradeId: string;
  /** False when the ledger had already settled this trade (a re-run step). */
  readonly moved: boolean;
  /** Trade → settled, in ms. */
  readonly latencyMs: number;
}

/**
 * Settlement as a flow: each side of a trade is a `fills` job (it confirms that side can settle:
 * here, that its account is not frozen), and the `settlements` parent runs once both are done,
 * moving cash and units in the ledger and releasing the filled part of both orders' reservations
 * in one atomic, idempotent step (keyed by trade id), then invalidating both accounts' cached
 * positions.
 */
@Injectable()
export class SettlementProcessor {
  constructor(
    private readonly store: ExchangeStore,
    private readonly positions: PositionsService,
  ) {}

  /** One side of a trade. A frozen account fails for good (FatalJobError: no retries). */
  @Processor(FILLS_QUEUE, { concurrency: 32 })
  fill(job: Job<FillLeg>): FillResult {
    const { trade, side } = job.payload;
    const account = side === 'buy' ? trade.buyAccount : trade.sellAccount;
    if (account.startsWith(FROZEN_PREFIX)) throw new FatalJobError(`account ${account} is frozen`);
    const notional = ticksFromWire(trade.notionalTicks);
    return { account, side, units: side === 'buy' ? trade.qty : -trade.qty, cashTicks: ticksToWire(side === 'buy' ? -notional : notional) };
  }

  /** Both fills are done: move cash and units, and release what the fill used of the reservations, once. */
  @Flow(SETTLEMENTS_QUEUE, { concurrency: 32 })
  async settle(job: FlowJob<Trade, FillResult>): Promise<SettlementResult> {
    const trade = job.payload;
    const { buy, sell } = job.children.byKey;
    if (buy?.outcome !== 'done' || sell?.outcome !== 'done') throw new FatalJobError(`trade ${trade.id}: a fill is missing`);
    const moved = await this.store.settle(trade);
    await this.positions.changed(trade.buyAccount, trade.sellAccount);
    const latencyMs = Date.now() - trade.at;
    // Once per trade id: a step re-run after it moved the ledger (moved = false) still records the
    // sample its first run may have lost, and never a second one — /stats counts each settlement once.
    await this.store.recordSettlement(trade.id, latencyMs);
    return { tradeId: trade.id, moved, latencyMs };
  }
}
