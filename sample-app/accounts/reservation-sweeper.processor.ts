import { Injectable, Logger } from '@nestjs/common';
import { InjectQueue, Processor, Queue, type Job } from '@echomq/nestjs';
import type { Command } from '../engine/engine.types.js';
import { ORDERS_QUEUE } from '../exchange.names.js';
import type { Sequenced } from '../orders/intake.processor.js';
import { ExchangeStore } from '../store/exchange.store.js';
import { PositionsService } from './positions.service.js';

/** The queue of the ledger's housekeeping (the sweep schedule's jobs). */
export const LEDGER_QUEUE = 'ledger';
/** The sweep schedule: every minute. */
export const SWEEP_SCHEDULE = 'sweep-unsequenced';
/** A reservation this old whose order never reached the intake (and has no `orders` job) is released. */
export const UNSEQUENCED_AFTER_MS = 10 * 60_000;

/** What one sweep did. */
export type SweepReport = { readonly candidates: number; readonly released: number };

/**
 * Releases reservations whose order never reached the `orders` queue: a placement that reserved
 * and then failed to enqueue (Valkey unreachable, the instance killed) and whose client never
 * retried. A stored schedule runs it every minute on one instance fleet-wide. A candidate is a
 * reservation the intake has not marked sequenced, older than 10 minutes, with no `orders` job;
 * the release and the intake's mark are atomic on the reservation, so an order is either
 * sequenced with its money set aside or swept and then buried by the intake, never both. The
 * client order id is kept: a retry after the sweep reserves again under the same order id.
 */
@Injectable()
export class ReservationSweeper {
  private readonly log = new Logger('Ledger');

  constructor(
    private readonly store: ExchangeStore,
    private readonly positions: PositionsService,
    @InjectQueue(ORDERS_QUEUE) private readonly orders: Queue<Command, Sequenced>,
  ) {}

  /** One tick of the schedule. */
  @Processor(LEDGER_QUEUE, { concurrency: 1, schedules: [{ name: SWEEP_SCHEDULE, every: 60_000 }] })
  async tick(job: Job<null>): Promise<SweepReport> {
    const report = await this.sweepBefore(Date.now() - UNSEQUENCED_AFTER_MS);
    if (report.released > 0) this.log.warn(`job ${job.id}: released ${report.released} reservation(s) of orders that never reached the intake`);
    return report;
  }

  /** Releases the reservations made before `before` (ms) whose order has no `orders` job and was never sequenced. */
  async sweepBefore(before: number): Promise<SweepReport> {
    const ids = await this.store.unsequenced(before);
    const jobs = await Promise.all(ids.map((id) => this.orders.getJob(id)));
    const lost = ids.filter((_, i) => jobs[i] === null);
    const { released, accounts } = await this.store.sweep(lost);
    if (accounts.length > 0) await this.positions.changed(...accounts);
    return { candidates: ids.length, released };
  }
}
