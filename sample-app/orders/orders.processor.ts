import { Injectable } from '@nestjs/common';
import { FatalJobError, Processor, type Job } from '@echomq/nestjs';
import { OrderBooks, type Fill } from './order-book.js';
import { validateOrder, type OrderInput } from './order.dto.js';

/** The queue orders travel on. */
export const ORDERS_QUEUE = 'orders';

/** The result of an accepted order job. */
export interface OrderAccepted {
  readonly accepted: true;
  /** Executions against resting orders, in priority order. */
  readonly fills: Fill[];
  readonly filledQty: number;
  /** What is left resting on the book. */
  readonly restingQty: number;
}

/**
 * Accepts orders from the `orders` queue: re-validates the payload (anything may have enqueued
 * it), then matches it on the in-memory books. Matching is synchronous, so up to 8 concurrent
 * handlers still touch the books one at a time, in claim (FIFO) order.
 */
@Injectable()
export class OrdersProcessor {
  constructor(private readonly books: OrderBooks) {}

  /** Handles one order job; an invalid payload goes straight to the morgue (no retries). */
  @Processor(ORDERS_QUEUE, { concurrency: 8 })
  accept(job: Job<OrderInput>): OrderAccepted {
    const v = validateOrder(job.payload);
    if (!v.ok) throw new FatalJobError(`invalid order payload: ${v.problems.join('; ')}`);
    const outcome = this.books.submit({ id: job.id, ...v.order });
    return { accepted: true, fills: outcome.fills, filledQty: outcome.filledQty, restingQty: outcome.restingQty };
  }
}
