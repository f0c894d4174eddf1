/**
 * Bus consumer groups (docs/bus.md): `GroupConsumer`, one member of a Valkey consumer group on a
 * topic's log, with its reader, batched acks, reclaim of a dead member's entries, upkeep and loss
 * reports. The rest of src/ imports this folder through this file only.
 */
export { GroupConsumer } from './group-consumer.js';
export { cmd } from './group-wire.js';
export { processLosses$ } from './losses.js';
export type { GroupLoss, GroupLossKind } from './losses.js';
export { consumerName, resolveGroupOptions } from './options.js';
export type { BusEvent, EventHandler, GroupConsumerConfig, GroupStart, OnEventOptions } from './options.js';
export { fields, text } from './upkeep.js';
export type { GroupSnapshot } from './upkeep.js';
