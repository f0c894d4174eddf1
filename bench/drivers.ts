/**
 * The driver of each system under test, by name (shared by the orchestrator and the child
 * worker processes).
 */
import { BeeQueueDriver } from './beequeue.js';
import { BullMqDriver } from './bullmq.js';
import type { Driver, SystemName } from './common.js';
import { EchoMqDriver } from './echomq.js';

/** Builds the driver of `name` on the Valkey at `url`. */
export function makeDriver(name: SystemName, url: string): Driver {
  if (name === 'echomq') return new EchoMqDriver(url);
  return name === 'bullmq' ? new BullMqDriver(url) : new BeeQueueDriver(url);
}
