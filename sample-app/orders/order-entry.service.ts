import { createHash } from 'node:crypto';
import { ConflictException, ForbiddenException, Inject, Injectable, NotFoundException, UnprocessableEntityException } from '@nestjs/common';
import { InjectQueue, Queue, type JobStatus } from '@echomq/nestjs';
import { PositionsService } from '../accounts/positions.service.js';
import { EXCHANGE_CONFIG, type ExchangeConfig } from '../config/exchange.config.js';
import type { CancelCommand, Command, OrderState, OrderStatus, PlaceCommand } from '../engine/engine.types.js';
import { averagePrice, formatUnits, ticksFromWire, ticksToWire } from '../engine/money.js';
import { mintedAt } from '../engine/ids.js';
import { ORDERS_QUEUE } from '../exchange.names.js';
import { ExchangeStore } from '../store/exchange.store.js';
import type { ReservationRequest } from '../store/ledger.store.js';
import type { Sequenced } from './intake.processor.js';
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
  /** Limit price in units, a decimal string with 4 decimals ("99999.9999"). */
  readonly price?: string;
  /** `accepted` until the book has seen it (its intake job's status in `intake`). */
  readonly status: OrderStatus | 'accepted';
  readonly filledQty: number;
  /** Average fill price in units (rounded half away from zero to a tick), a decimal string. */
  readonly avgPrice?: string;
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
    .update(JSON.stringify([o.account, o.symbol, o.side, o.type, o.qty, o.priceTicks === undefined ? null : ticksToWire(o.priceTicks)]))
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
    ...(s.priceTicks === undefined ? {} : { price: formatUnits(ticksFromWire(s.priceTicks)) }),
    status: s.status,
    filledQty: s.filledQty,
    ...(s.filledQty > 0 ? { avgPrice: formatUnits(averagePrice(ticksFromWire(s.filledNotionalTicks), s.filledQty)) } : {}),
    ...(s.reason ? { reason: s.reason } : {}),
  };
}

/**
 * How long after its intake job finished an order may still have no view (the book sees a
 * command within seconds, a failover within a few): past it, a missing view means it expired.
 */
const UNSEEN_AFTER_MS = 3_600_000;

/** The 422 body of an order refused because its account lacks the cash or units it would reserve. */
export interface InsufficientBody {
  readonly statusCode: 422;
  readonly error: 'insufficient-funds' | 'insufficient-units';
  readonly message: string;
  readonly reason: string;
  /** What the account has free (held − reserved): cash in units with 4 decimals, or whole units. */
  readonly available: string;
  /** What the order would reserve, in the same unit. */
  readonly needed: string;
}

/**
 * Order entry: an order becomes an `orders` job (its id is the order id) that the intake
 * sequences onto its shard's log. Placement is idempotent by client order id: the first request
 * claims `account`/`clientOrderId` → a minted job id in the store (SET NX), and every request,
 * first or retried, enqueues under the claimed id — EchoMQ adds a job once per id, so a crash
 * between the claim and the enqueue is repaired by the retry.
 *
 * Between the claim and the enqueue, the order reserves what it may spend in the ledger (once
 * per order id): a buy qty × its limit price (a market buy qty × the collar) of cash, a sell qty
 * units. An account that has not enough free is refused with 422 and the claim is released, so
 * nothing is written and a retry after a deposit can succeed. Reads and cancels are for the
 * order's own account only (403 otherwise).
 */
@Injectable()
export class OrderEntryService {
  constructor(
    @InjectQueue(ORDERS_QUEUE) private readonly orders: Queue<Command, Sequenced>,
    private readonly store: ExchangeStore,
    private readonly positions: PositionsService,
    @Inject(EXCHANGE_CONFIG) private readonly config: ExchangeConfig,
  ) {}

  /** Places an order (or finds the one this request already placed); 422 when its account is short. */
  async place(o: OrderInput): Promise<PlaceReceipt> {
    const minted = this.orders.mintId();
    const clientOrderId = o.clientOrderId ?? minted;
    const fp = fingerprint(o);
    const claim = await this.store.claimClientOrderId(o.account, clientOrderId, minted, fp);
    if (claim.fingerprint !== fp) {
      throw new ConflictException(`clientOrderId ${JSON.stringify(clientOrderId)} of account ${JSON.stringify(o.account)} was used for a different order`);
    }
    const reserved = await this.store.reserve(this.reservationOf(o, claim.orderId));
    if (!reserved.ok) {
      await this.store.releaseClientOrderId(o.account, clientOrderId, claim.orderId);
      throw new UnprocessableEntityException(this.refusal(o, reserved.available, reserved.needed));
    }
    if (!reserved.repeat) await this.positions.changed(o.account);
    const cmd: PlaceCommand = {
      kind: 'place',
      orderId: claim.orderId,
      clientOrderId,
      account: o.account,
      symbol: o.symbol,
      side: o.side,
      type: o.type,
      qty: o.qty,
      ...(o.priceTicks === undefined ? {} : { priceTicks: ticksToWire(o.priceTicks) }),
      // The order id's mint time: every enqueue of one order (a retry days later too) carries the
      // same acceptance time, so the engine's 1 h horizon refuses a late repeat (engine/ids.ts).
      acceptedAt: mintedAt(claim.orderId) ?? Date.now(),
    };
    await this.orders.enqueue(cmd, { id: claim.orderId });
    return { orderId: claim.orderId, clientOrderId, repeat: claim.orderId !== minted };
  }

  /** What an order reserves: cash at its limit (a market buy: at the collar), or the units it sells. */
  private reservationOf(o: OrderInput, orderId: string): ReservationRequest {
    if (o.side === 'sell') return { orderId, account: o.account, symbol: o.symbol, per: 1n, qty: o.qty, overdraft: this.config.allowShort };
    return { orderId, account: o.account, per: o.priceTicks ?? this.config.marketBuyCollarTicks, qty: o.qty, overdraft: this.config.allowNegativeCash };
  }

  private refusal(o: OrderInput, available: bigint, needed: bigint): InsufficientBody {
    const cash = o.side === 'buy';
    const [have, need] = cash ? [formatUnits(available), formatUnits(needed)] : [available.toString(), needed.toString()];
    const at = o.priceTicks === undefined ? `market (collar ${formatUnits(this.config.marketBuyCollarTicks)})` : formatUnits(o.priceTicks);
    const reason = cash
      ? `buying ${o.qty} ${o.symbol} at ${at} reserves ${need} of cash; account ${o.account} has ${have} available`
      : `selling ${o.qty} ${o.symbol} reserves ${need} units; account ${o.account} has ${have} available`;
    return { statusCode: 422, error: cash ? 'insufficient-funds' : 'insufficient-units', message: reason, reason, available: have, needed: need };
  }

  /**
   * An order of `account`: its book state, or its intake job while the book has not seen it; 403
   * for another account's; 404 for none, and for one whose view expired (ended over 24 h ago:
   * its intake job finished long before, yet no view exists).
   */
  async get(orderId: string, account: string): Promise<OrderView> {
    const job = await this.orders.getJob(orderId);
    const state = await this.store.view(orderId);
    const view = state ? viewOf(state) : job?.payload?.kind === 'place' ? accepted(job.payload, job.status) : undefined;
    if (!view) throw new NotFoundException(`no order ${JSON.stringify(orderId)}`);
    if (view.account !== account) throw new ForbiddenException(`order ${orderId} is not of account ${account}`);
    const sequencedLongAgo = job?.status === 'done' && job.finishedAt !== undefined && Date.now() - job.finishedAt.getTime() > UNSEEN_AFTER_MS;
    if (!state && sequencedLongAgo) throw new NotFoundException(`order ${orderId} ended more than a day ago; its view expired`);
    return view;
  }

  /** Requests a cancel of an order of `account`; 409 when the order has already ended, 403 for another account's. */
  async cancel(orderId: string, account: string): Promise<OrderView> {
    const view = await this.get(orderId, account);
    if (view.status === 'filled' || view.status === 'cancelled') throw new ConflictException(`order ${orderId} is already ${view.status}`);
    await this.orders.enqueue({ kind: 'cancel', orderId, symbol: view.symbol } satisfies CancelCommand);
    return view;
  }
}

/** The view of a placement the book has not seen yet. */
function accepted(p: PlaceCommand, intake: JobStatus): OrderView {
  const { kind: _kind, ...placed } = p;
  return { ...viewOf({ ...placed, filledQty: 0, filledNotionalTicks: '0', status: 'open', seq: -1 }), status: 'accepted', intake };
}
