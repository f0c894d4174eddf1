import { Body, Controller, Delete, ForbiddenException, Get, HttpCode, HttpStatus, Inject, Param, Post, Res, UseGuards } from '@nestjs/common';
import { ApiKeyGuard } from '../auth/api-key.guard.js';
import { CurrentAccount } from '../auth/current-account.decorator.js';
import { EXCHANGE_CONFIG, type ExchangeConfig } from '../config/exchange.config.js';
import { OrderValidationPipe } from './order.dto.js';
import { OrderEntryService, type OrderView, type PlaceReceipt } from './order-entry.service.js';

/** The part of an HTTP response the controller sets. */
interface StatusResponse {
  status(code: number): unknown;
}

/** The body with `account` defaulted to the key's (an order names its account, or is the key's). */
const withAccount = (body: unknown, account: string): unknown =>
  typeof body === 'object' && body !== null && !Array.isArray(body) && !('account' in body) ? { ...body, account } : body;

/**
 * Order entry over HTTP, for the account of the request's `x-api-key` (`ApiKeyGuard`: 401
 * without a known key). An order for another account, and a read or cancel of another account's
 * order, is 403. A malformed order id surfaces as EchoMQ's `InvalidIdError`, which the error
 * filter turns into a 400.
 */
@Controller('orders')
@UseGuards(ApiKeyGuard)
export class OrdersController {
  private readonly validation: OrderValidationPipe;

  constructor(
    private readonly entry: OrderEntryService,
    @Inject(EXCHANGE_CONFIG) config: ExchangeConfig,
  ) {
    this.validation = new OrderValidationPipe(config);
  }

  /**
   * Places an order: 202 when new, 200 for a retry of the same request, 400 listing every
   * problem, 403 for another account, 409 for a reused client id, 422 when the account is short.
   */
  @Post()
  async place(@Body() body: unknown, @CurrentAccount() account: string, @Res({ passthrough: true }) res: StatusResponse): Promise<PlaceReceipt> {
    const order = this.validation.transform(withAccount(body, account));
    if (order.account !== account) throw new ForbiddenException(`this key acts for account ${account} only`);
    const receipt = await this.entry.place(order);
    res.status(receipt.repeat ? HttpStatus.OK : HttpStatus.ACCEPTED);
    return receipt;
  }

  /** One order of the key's account: its book state (or `accepted` before the book saw it); 404 when unknown. */
  @Get(':id')
  get(@Param('id') id: string, @CurrentAccount() account: string): Promise<OrderView> {
    return this.entry.get(id, account);
  }

  /** Requests a cancel: 202 with the order as it stood; 409 once filled or cancelled. */
  @Delete(':id')
  @HttpCode(HttpStatus.ACCEPTED)
  cancel(@Param('id') id: string, @CurrentAccount() account: string): Promise<OrderView> {
    return this.entry.cancel(id, account);
  }
}
