import { Injectable } from '@nestjs/common';
import { BusService, FatalJobError, Processor, type Job } from '@echomq/nestjs';
import type { Command } from '../engine/engine.types.js';
import { shardOf } from '../engine/ids.js';
import { commandTopic, ORDERS_QUEUE } from '../exchange.names.js';

/** The result of an intake job. */
export interface Sequenced {
  /** The command's event id on its shard's log. */
  readonly event: string;
}

const isCommand = (v: unknown): v is Command =>
  typeof v === 'object' && v !== null && ((v as Command).kind === 'place' || (v as Command).kind === 'cancel') && typeof (v as Command).symbol === 'string';

/**
 * Sequences order-entry commands: each `orders` job is appended to its shard's log
 * (`orders.s<n>`), whose order is the matching order, and the shard's holder is woken by a Bus
 * signal. At least once: a job re-run after a crash appends its command again, and the engine
 * ignores the repeat (an order id it has seen, a cancel of an order no longer resting).
 */
@Injectable()
export class IntakeProcessor {
  constructor(private readonly bus: BusService) {}

  /** Appends one command to its shard's log. */
  @Processor(ORDERS_QUEUE, { concurrency: 32 })
  async sequence(job: Job<Command>): Promise<Sequenced> {
    if (!isCommand(job.payload)) throw new FatalJobError('not an exchange command');
    const topic = commandTopic(shardOf(job.payload.symbol));
    const event = await this.bus.publish<Command>(topic, job.payload);
    await this.bus.signal(topic, { event });
    return { event };
  }
}
