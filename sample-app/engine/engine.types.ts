/**
 * The matching engine's vocabulary. Prices and amounts are integer ticks (1 tick = 0.0001 of the
 * quote currency, money.ts): `bigint` inside the engine, decimal strings of ticks in everything
 * that leaves it (commands on the log, trades, order states, depth), so no JS `number` ever holds
 * money and nothing rounds. Quantities are whole units ≤ 1,000,000 and stay numbers.
 */

/** Which way an order trades. */
export type Side = 'buy' | 'sell';

/** `limit` rests what it cannot fill; `market` fills what it can and cancels the rest. */
export type OrderType = 'limit' | 'market';

/** A new order, as sequenced on its shard's log (a type, so it is `Json`). */
export type PlaceCommand = {
  readonly kind: 'place';
  readonly orderId: string;
  readonly clientOrderId: string;
  readonly account: string;
  readonly symbol: string;
  readonly side: Side;
  readonly type: OrderType;
  /** Whole units, > 0. */
  readonly qty: number;
  /** Limit price in ticks, a decimal string (limit orders only): `"999999999"` is 99,999.9999. */
  readonly priceTicks?: string;
  /**
   * When order entry accepted it (epoch ms). A place that reaches the book more than
   * `SEEN_HORIZON_MS` after this is refused as stale, which is what lets the engine forget the ids
   * of orders older than the horizon (matching-engine.ts).
   */
  readonly acceptedAt: number;
};

/** A cancel request for a resting order. */
export type CancelCommand = {
  readonly kind: 'cancel';
  readonly orderId: string;
  readonly symbol: string;
};

/** What the order-entry side puts on a shard's log. */
export type Command = PlaceCommand | CancelCommand;

/** The lifecycle of an order on the book. */
export type OrderStatus = 'open' | 'partially-filled' | 'filled' | 'cancelled';

/** An order's state after the last command that touched it: the placement's fields, and its fills. */
export type OrderState = Omit<PlaceCommand, 'kind'> & {
  readonly filledQty: number;
  /** Σ price × qty of its fills, in ticks (a decimal string). */
  readonly filledNotionalTicks: string;
  readonly status: OrderStatus;
  /** Position on the shard's log of the command that produced this state (0-based). */
  readonly seq: number;
  /** Why it ended without a full fill, e.g. a market order that ran out of liquidity. */
  readonly reason?: string;
};

/** One execution between an incoming (taker) order and a resting (maker) order (a type, so it is `Json`). */
export type Trade = {
  /** `T<shard>.<n>`: unique and deterministic (the n-th trade of the shard). */
  readonly id: string;
  readonly shard: number;
  /** The n of the id. */
  readonly tradeSeq: number;
  readonly symbol: string;
  /** The maker's price, in ticks (a decimal string). */
  readonly priceTicks: string;
  /** Whole units. */
  readonly qty: number;
  /** price × qty, in ticks (a decimal string): what the buyer pays and the seller gets. */
  readonly notionalTicks: string;
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

/** One price level of a depth view (a type, so it is `Json`). */
export type DepthLevel = {
  /** The level's price, in ticks (a decimal string). */
  readonly priceTicks: string;
  readonly qty: number;
  readonly orders: number;
};

/** The top of one symbol's book. */
export type Depth = {
  readonly symbol: string;
  readonly bids: DepthLevel[];
  readonly asks: DepthLevel[];
};
