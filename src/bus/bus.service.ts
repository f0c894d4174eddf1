import type { EchoMqConnection } from '../protocol/connection.js';
import type { BusOptions } from './bus.options.js';

/** The Bus: publish to a topic's retained log, replay it, signal, and keep its retention. */
export class BusService {
  constructor(
    protected readonly conn: EchoMqConnection,
    protected readonly options: BusOptions = {},
  ) {}
}
