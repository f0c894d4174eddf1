import { createHash } from 'node:crypto';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { QueueService, type JobStatus } from '@echomq/nestjs';
import { fromTicks, toTicks, type CancelCommand, type Command, type OrderState, type OrderStatus, type PlaceCommand } from '../engine/engine.types.js';
import { ORDERS_QUEUE } from '../exchange.names.js';
import { ExchangeStore } from '../store/exchange.store.js';
import type { OrderInput } from './order.dto.js';

/** What the API shows of an order. */
export interface OrderView {
  readonly orderId: string;
  readonly clientOrderId: string;
  readonly account: string;
  readonly symbol: string;
  readonly side: PlaceCommand['side'];
  readonly type: PlaceCommand['type'];
  readonly qty: number;
  readonly price?: number;
  /** `accepted` until the book has seen it (its intake job's status in `intake`). */
  readonly status: OrderStatus | 'accepted';
  readonly filledQty: number;
  readonly avgPrice?: number;
  readonly reason?: string;
  readonly intake?: JobStatus;
}

/** The reply of a placement: 202 for a new order, 200 for a repeat of the same request. */
export interface PlaceReceipt {
  readonly orderId: string;
  readonly clientOrderId: string;
  readonly repeat: boolean;
}

/** A request's content, to tell a retry (same content) from a reuse of the id (409). */
const fingerprint = (o: OrderInput): string =>
  createHash('sha256')
    .update(JSON.stringify([o.account, o.symbol, o.side, o.type, o.qty, o.price ?? null]))
    .digest('base64url')
    .slice(0, 16);

/** The view of a stored order state. */
export function viewOf(s: OrderState): OrderView {
  return {
    orderId: s.orderId,
    clientOrderId: s.clientOrderId,
    account: s.account,
    symbol: s.symbol,
    side: s.side,
    type: s.type,
    qty: s.qty,
    ...(s.priceTicks === undefined ? {} : { price: fromTicks(s.priceTicks) }),
    status: s.status,
    filledQty: s.filledQty,
    ...(s.filledQty > 0 ? { avgPrice: fromTicks(Math.round(s.filledNotionalTicks / s.filledQty)) } : {}),
    ...(s.reason ? { reason: s.reason } : {}),
  };
}

/**
 * Order entry: an order becomes an `orders` job (its id is the order id) that the intake
 * sequences onto its shard's log. Placement is idempotent by client order id: the first request
 * claims `account`/`clientOrderId` → a minted job id in the store (SET NX), and every request,
 * first or retried, enqueues under the claimed id — EchoMQ adds a job once per id, so a crash
 * between the claim and the enqueue is repaired by the retry.
 */
@Injectable()
export class OrderEntryService {
  constructor(
    private readonly queues: QueueService,
    private readonly store: ExchangeStore,
  ) {}

  /** Places an order (or finds the one this request already placed). */
  async place(o: OrderInput): Promise<PlaceReceipt> {
    const minted = this.queues.mintId();
    const clientOrderId = o.clientOrderId ?? minted;
    const fp = fingerprint(o);
    const claim = await this.store.claimClientOrderId(o.account, clientOrderId, minted, fp);
    if (claim.fingerprint !== fp) {
      throw new ConflictException(`clientOrderId ${JSON.stringify(clientOrderId)} of account ${JSON.stringify(o.account)} was used for a different order`);
    }
    const cmd: PlaceCommand = {
      kind: 'place',
      orderId: claim.orderId,
      clientOrderId,
      account: o.account,
      symbol: o.symbol,
      side: o.side,
      type: o.type,
      qty: o.qty,
      ...(o.price === undefined ? {} : { priceTicks: toTicks(o.price) }),
    };
    await this.queues.enqueue<Command>(ORDERS_QUEUE, cmd, { id: claim.orderId });
    return { orderId: claim.orderId, clientOrderId, repeat: claim.orderId !== minted };
  }

  /** An order: its book state, or its intake job while the book has not seen it. */
  async get(orderId: string): Promise<OrderView> {
    const job = await this.queues.getJob<Command>(ORDERS_QUEUE, orderId);
    const state = await this.store.view(orderId);
    if (state) return viewOf(state);
    if (!job || job.payload?.kind !== 'place') throw new NotFoundException(`no order ${JSON.stringify(orderId)}`);
    const { kind: _kind, ...placed } = job.payload;
    return { ...viewOf({ ...placed, filledQty: 0, filledNotionalTicks: 0, status: 'open', seq: -1 }), status: 'accepted', intake: job.status };
  }

  /** Requests a cancel; 409 when the order has already ended. */
  async cancel(orderId: string): Promise<OrderView> {
    const view = await this.get(orderId);
    if (view.status === 'filled' || view.status === 'cancelled') throw new ConflictException(`order ${orderId} is already ${view.status}`);
    await this.queues.enqueue<Command>(ORDERS_QUEUE, { kind: 'cancel', orderId, symbol: view.symbol } satisfies CancelCommand);
    return view;
  }
}
