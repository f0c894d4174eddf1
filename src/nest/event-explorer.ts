import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { InvalidOptionError } from '../core/errors.js';
import type { EventHandler } from '../bus/consumer-group/index.js';
import { findDecoratedMethods } from './method-scanner.js';
import { getOnEventMetadata, type OnEventMetadata } from './on-event-decorator.js';

/** A discovered `@OnEvent` method, bound to its instance. */
export interface DiscoveredEventHandler extends OnEventMetadata {
  readonly handler: EventHandler<unknown>;
  /** `ClassName.method`, for logs. */
  readonly name: string;
}

/**
 * Collects `@OnEvent` methods at module init. No I/O happens here. Two methods of one app in the
 * same group of the same topic are refused (`InvalidOptionError`): with a configured `bus.instance`
 * they would share one consumer name, and so one pending list.
 */
@Injectable()
export class EventExplorer implements OnModuleInit {
  /** What was found, in discovery order. */
  readonly handlers: DiscoveredEventHandler[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onModuleInit(): void {
    this.handlers.length = 0;
    const seen = new Map<string, string>();
    for (const { meta, bound, name } of findDecoratedMethods(this.discovery, this.scanner, getOnEventMetadata)) {
      const slot = `${meta.topic}\u0000${meta.options.group}`;
      const other = seen.get(slot);
      if (other) throw new InvalidOptionError(`${name} and ${other} both consume group "${meta.options.group}" of topic "${meta.topic}"`);
      seen.set(slot, name);
      this.handlers.push({ ...meta, handler: bound as EventHandler<unknown>, name });
    }
  }
}
