import { Body, Controller, Get, HttpCode, HttpStatus, NotFoundException, Param, Post } from '@nestjs/common';
import { QueueService, type JobCounts, type JobStatus } from '@echomq/nestjs';
import { OrderValidationPipe, type OrderInput } from './order.dto.js';
import { ORDERS_QUEUE, type OrderAccepted } from './orders.processor.js';

/** The reply of `POST /orders`. */
export interface OrderReceipt {
  readonly id: string;
  readonly status: JobStatus;
}

/** The reply of `GET /orders/:id`. */
export interface OrderView {
  readonly id: string;
  readonly status: JobStatus;
  readonly attempts: number;
  readonly payload: OrderInput;
  readonly result?: OrderAccepted;
  readonly error?: string;
  readonly createdAt: string;
  readonly finishedAt?: string;
}

/**
 * The HTTP face of the `orders` queue: enqueue an order, read its job, count jobs. A malformed id
 * surfaces as EchoMQ's `InvalidIdError`, which `EchoMqHttpFilter` turns into a 400.
 */
@Controller('orders')
export class OrdersController {
  constructor(private readonly queues: QueueService) {}

  /** Validates and enqueues an order; 202 with the job id. */
  @Post()
  @HttpCode(HttpStatus.ACCEPTED)
  async place(@Body(OrderValidationPipe) order: OrderInput): Promise<OrderReceipt> {
    const id = await this.queues.enqueue<OrderInput>(ORDERS_QUEUE, order);
    return { id, status: 'pending' };
  }

  /** Jobs of the `orders` queue per status. */
  @Get('stats/counts')
  counts(): Promise<JobCounts> {
    return this.queues.counts(ORDERS_QUEUE);
  }

  /** One order's job: 404 when unknown (or past retention), 400 when the id is malformed. */
  @Get(':id')
  async get(@Param('id') id: string): Promise<OrderView> {
    const job = await this.queues.getJob<OrderInput, OrderAccepted>(ORDERS_QUEUE, id);
    if (!job) throw new NotFoundException(`no order ${JSON.stringify(id)}`);
    return {
      id: job.id,
      status: job.status,
      attempts: job.attempts,
      payload: job.payload,
      result: job.result,
      error: job.error,
      createdAt: job.createdAt.toISOString(),
      finishedAt: job.finishedAt?.toISOString(),
    };
  }
}
