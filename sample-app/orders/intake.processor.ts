import { Injectable } from '@nestjs/common';
import { BusService, FatalJobError, Processor, type Job } from '@echomq/nestjs';
import type { Command } from '../engine/engine.types.js';
import { shardOf } from '../engine/ids.js';
import { commandTopic, ORDERS_QUEUE } from '../exchange.names.js';
import { ExchangeStore } from '../store/exchange.store.js';
import { MAX_PRICE_TICKS, MAX_QTY } from './order.dto.js';

/** The result of an intake job. */
export interface Sequenced {
  /** The command's event id on its shard's log. */
  readonly event: string;
}

const str = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 100;
const int = (v: unknown, max: number): boolean => Number.isSafeInteger(v) && (v as number) > 0 && (v as number) <= max;
/** A price in ticks on the wire: a decimal string of 1..MAX_PRICE_TICKS. */
const ticks = (v: unknown): boolean => typeof v === 'string' && /^[1-9]\d{0,9}$/.test(v) && BigInt(v) <= MAX_PRICE_TICKS;

/**
 * True when a job payload is a command the engine can apply (anything may enqueue on `orders`,
 * and a malformed command on the log would be replayed into every rebuilt book).
 */
export function isCommand(v: unknown): v is Command {
  if (typeof v !== 'object' || v === null) return false;
  const c = v as Record<string, unknown>;
  if (!str(c.orderId) || !str(c.symbol)) return false;
  if (c.kind === 'cancel') return true;
  if (c.kind !== 'place' || !str(c.account) || !str(c.clientOrderId) || (c.side !== 'buy' && c.side !== 'sell') || !int(c.qty, MAX_QTY)) return false;
  if (!int(c.acceptedAt, Number.MAX_SAFE_INTEGER)) return false;
  return c.type === 'market' ? c.priceTicks === undefined : c.type === 'limit' && ticks(c.priceTicks);
}

/**
 * Sequences order-entry commands: each `orders` job is appended to its shard's log
 * (`orders.s<n>`), whose order is the matching order, and the shard's holder is woken by a Bus
 * signal. At least once: a job re-run after a crash appends its command again, and the engine
 * ignores the repeat (an order id it has seen, a cancel of an order no longer resting).
 *
 * Anything may enqueue on `orders`, so a command is checked before it reaches a log: a
 * malformed one, or a placement that did not go through order entry (no reservation in the
 * ledger for its order id: it would trade money nobody set aside), is buried, never sequenced.
 */
@Injectable()
export class IntakeProcessor {
  constructor(
    private readonly bus: BusService,
    private readonly store: ExchangeStore,
  ) {}

  /** Appends one command to its shard's log. */
  @Processor(ORDERS_QUEUE, { concurrency: 32 })
  async sequence(job: Job<Command>): Promise<Sequenced> {
    if (!isCommand(job.payload)) throw new FatalJobError('not an exchange command');
    if (job.payload.kind === 'place' && !(await this.store.markSequenced(job.payload.orderId))) {
      throw new FatalJobError(`order ${job.payload.orderId} has no reservation: it did not come through order entry`);
    }
    const topic = commandTopic(shardOf(job.payload.symbol));
    const event = await this.bus.publish<Command>(topic, job.payload);
    await this.bus.signal(topic, { event });
    return { event };
  }
}
