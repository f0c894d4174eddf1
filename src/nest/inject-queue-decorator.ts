import { Inject } from '@nestjs/common';
import { assertName } from '../core/keys.js';

/** The DI token of the `Queue` handle of `name` (registered by `EchoMqModule.forFeature`). */
export function getQueueToken(name: string): string {
  return `EchoMqQueue:${name}`;
}

/**
 * Injects the typed `Queue<P, R>` handle of a queue registered with `EchoMqModule.forFeature`
 * (`@InjectQueue('orders') orders: Queue<OrderInput, OrderResult>`). The name is checked at once.
 */
export function InjectQueue(name: string): PropertyDecorator & ParameterDecorator {
  assertName(name, 'queue');
  return Inject(getQueueToken(name));
}
