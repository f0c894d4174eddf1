/** The queues and topics of the exchange (one place, so tests and scripts agree). */

/** Queue of order-entry commands (placements and cancels), idempotent by job id. */
export const ORDERS_QUEUE = 'orders';
/** Queue of settlement legs (flow children, one per side of a trade). */
export const FILLS_QUEUE = 'fills';
/** Queue of settlement steps (flow parents). */
export const SETTLEMENTS_QUEUE = 'settlements';
/** Topic of every trade. */
export const TRADES_TOPIC = 'trades';
/** Topic of a shard's sequenced commands: the durable log its book is rebuilt from. */
export const commandTopic = (shard: number): string => `orders.s${shard}`;
/** Topic of depth changes: a shard's holder publishes `DepthChanged` after storing new depth (the books cache follows it). */
export const BOOKS_CHANGED_TOPIC = 'books.changed';
/** Queue of the minute-candle seal jobs (one job per schedule tick). */
export const CANDLES_QUEUE = 'candles';
/** Topic of sealed minute candles (`SealedCandle`), published once a minute is sealed. */
export const CANDLES_CLOSED_TOPIC = 'candles.closed';
