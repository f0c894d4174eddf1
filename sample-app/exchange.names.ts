/** The queues and topics of the exchange (one place, so tests and scripts agree). */

/** Queue of order-entry commands (placements and cancels), idempotent by job id. */
export const ORDERS_QUEUE = 'orders';
/** Queue of the book-holder jobs: one long-running job per shard, its lease is the shard's. */
export const BOOKS_QUEUE = 'books';
/** Queue of settlement legs (flow children, one per side of a trade). */
export const FILLS_QUEUE = 'fills';
/** Queue of settlement steps (flow parents). */
export const SETTLEMENTS_QUEUE = 'settlements';
/** Topic of every trade. */
export const TRADES_TOPIC = 'trades';
/** Topic of a shard's sequenced commands: the durable log its book is rebuilt from. */
export const commandTopic = (shard: number): string => `orders.s${shard}`;
