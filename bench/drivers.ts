/**
 * The driver of each system under test, by name (shared by the orchestrator and the child
 * worker processes).
 */
import { BullMqDriver } from './bullmq.js';
import type { Driver, SystemName } from './common.js';
import { EchoMqDriver } from './echomq.js';

/** Builds the driver of `name` on the Valkey at `url`. */
export function makeDriver(name: SystemName, url: string): Driver {
  return name === 'echomq' ? new EchoMqDriver(url) : new BullMqDriver(url);
}
