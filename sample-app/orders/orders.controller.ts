import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Param, Post, Res } from '@nestjs/common';
import { OrderValidationPipe, type OrderInput } from './order.dto.js';
import { OrderEntryService, type OrderView, type PlaceReceipt } from './order-entry.service.js';

/** The part of an HTTP response the controller sets. */
interface StatusResponse {
  status(code: number): unknown;
}

/**
 * Order entry over HTTP. A malformed order id surfaces as EchoMQ's `InvalidIdError`, which the
 * error filter turns into a 400.
 */
@Controller('orders')
export class OrdersController {
  constructor(private readonly entry: OrderEntryService) {}

  /** Places an order: 202 when new, 200 for a retry of the same request, 409 for a reused client id. */
  @Post()
  async place(@Body(OrderValidationPipe) order: OrderInput, @Res({ passthrough: true }) res: StatusResponse): Promise<PlaceReceipt> {
    const receipt = await this.entry.place(order);
    res.status(receipt.repeat ? HttpStatus.OK : HttpStatus.ACCEPTED);
    return receipt;
  }

  /** One order: its book state (or `accepted` before the book saw it); 404 when unknown. */
  @Get(':id')
  get(@Param('id') id: string): Promise<OrderView> {
    return this.entry.get(id);
  }

  /** Requests a cancel: 202 with the order as it stood; 409 once filled or cancelled. */
  @Delete(':id')
  @HttpCode(HttpStatus.ACCEPTED)
  cancel(@Param('id') id: string): Promise<OrderView> {
    return this.entry.cancel(id);
  }
}
