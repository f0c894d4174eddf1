/**
 * The matching engine's vocabulary. Prices are integer ticks (1 tick = 0.0001 of the quote
 * currency), so matching and settlement never see floating-point rounding.
 */

/** Which way an order trades. */
export type Side = 'buy' | 'sell';

/** `limit` rests what it cannot fill; `market` fills what it can and cancels the rest. */
export type OrderType = 'limit' | 'market';

/** Ticks per unit of price (4 decimal places). */
export const TICKS_PER_UNIT = 10_000;

/** A price given in units (at most 4 decimals) as integer ticks. */
export const toTicks = (price: number): number => Math.round(price * TICKS_PER_UNIT);

/** Integer ticks back to a price in units. */
export const fromTicks = (ticks: number): number => ticks / TICKS_PER_UNIT;

/** A new order, as sequenced on its shard's log. */
export interface PlaceCommand {
  readonly kind: 'place';
  readonly orderId: string;
  readonly clientOrderId: string;
  readonly account: string;
  readonly symbol: string;
  readonly side: Side;
  readonly type: OrderType;
  /** Whole units, > 0. */
  readonly qty: number;
  /** Limit price in ticks (limit orders only). */
  readonly priceTicks?: number;
}

/** A cancel request for a resting order. */
export interface CancelCommand {
  readonly kind: 'cancel';
  readonly orderId: string;
  readonly symbol: string;
}

/** What the order-entry side puts on a shard's log. */
export type Command = PlaceCommand | CancelCommand;

/** The lifecycle of an order on the book. */
export type OrderStatus = 'open' | 'partially-filled' | 'filled' | 'cancelled';

/** An order's state after the last command that touched it: the placement's fields, and its fills. */
export interface OrderState extends Omit<PlaceCommand, 'kind'> {
  readonly filledQty: number;
  /** Σ price × qty of its fills, in ticks. */
  readonly filledNotionalTicks: number;
  readonly status: OrderStatus;
  /** Position on the shard's log of the command that produced this state (0-based). */
  readonly seq: number;
  /** Why it ended without a full fill, e.g. a market order that ran out of liquidity. */
  readonly reason?: string;
}

/** One execution between an incoming (taker) order and a resting (maker) order (a type, so it is `Json`). */
export type Trade = {
  /** `T<shard>.<n>`: unique and deterministic (the n-th trade of the shard). */
  readonly id: string;
  readonly shard: number;
  /** The n of the id. */
  readonly tradeSeq: number;
  readonly symbol: string;
  /** The maker's price, in ticks. */
  readonly priceTicks: number;
  readonly qty: number;
  readonly buyOrderId: string;
  readonly sellOrderId: string;
  readonly buyAccount: string;
  readonly sellAccount: string;
  readonly takerSide: Side;
  /** The instant of the command that caused it (its log entry's time), epoch ms. */
  readonly at: number;
  /** Position on the shard's log of that command. */
  readonly inputSeq: number;
};

/** What applying one command did. */
export interface ApplyResult {
  readonly trades: Trade[];
  /** Every order whose state changed (the taker and the makers it hit), latest state. */
  readonly orders: OrderState[];
  /** True when the command was a repeat of one already applied (nothing changed). */
  readonly duplicate: boolean;
}

/** One price level of a depth view. */
export interface DepthLevel {
  readonly priceTicks: number;
  readonly qty: number;
  readonly orders: number;
}

/** The top of one symbol's book. */
export interface Depth {
  readonly symbol: string;
  readonly bids: DepthLevel[];
  readonly asks: DepthLevel[];
}
