import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { InvalidOptionError } from '../core/errors.js';
import type { QueueEventDetail } from '../queue/event-log-reader.js';
import { findDecoratedMethods } from './method-scanner.js';
import { getOnQueueEventMetadata, type OnQueueEventMetadata } from './on-queue-event-decorator.js';

/** A discovered `@OnQueueEvent` method, bound to its instance. */
export interface DiscoveredQueueListener extends OnQueueEventMetadata {
  readonly handler: (event: QueueEventDetail) => unknown;
  /** `ClassName.method`, for logs (and the default fleet group). */
  readonly name: string;
}

/**
 * Collects `@OnQueueEvent` methods (idempotent; run at module init). No I/O happens here. Two
 * fleet listeners of one queue in one group are refused (`InvalidOptionError`): they would split
 * the group's events between them.
 */
@Injectable()
export class QueueEventExplorer implements OnModuleInit {
  /** What was found, in discovery order. */
  readonly listeners: DiscoveredQueueListener[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onModuleInit(): void {
    this.explore();
  }

  /** Finds the listeners now (again: the list is replaced). */
  explore(): readonly DiscoveredQueueListener[] {
    const found: DiscoveredQueueListener[] = [];
    const groups = new Map<string, string>();
    for (const { meta, bound, name } of findDecoratedMethods(this.discovery, this.scanner, getOnQueueEventMetadata)) {
      const l: DiscoveredQueueListener = { ...meta, group: meta.scope === 'fleet' ? (meta.group ?? name) : undefined, handler: bound as DiscoveredQueueListener['handler'], name };
      if (l.group !== undefined) {
        const slot = `${l.queue}\n${l.group}`;
        const other = groups.get(slot);
        if (other) throw new InvalidOptionError(`${name} and ${other} both read the events of queue "${l.queue}" in group "${l.group}": they would split them. Give one another group`);
        groups.set(slot, name);
      }
      found.push(l);
    }
    this.listeners.length = 0;
    this.listeners.push(...found);
    return this.listeners;
  }
}
