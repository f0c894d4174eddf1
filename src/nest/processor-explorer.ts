import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { InvalidOptionError } from '../core/errors.js';
import type { JobHandler } from '../queue/job.js';
import { findDecoratedMethods } from './method-scanner.js';
import { getProcessorMetadata, type ProcessorMetadata } from './processor-decorator.js';

/** A discovered `@Processor` method, bound to its instance. */
export interface DiscoveredProcessor extends ProcessorMetadata {
  readonly handler: JobHandler<unknown, unknown>;
  /** `ClassName.method`, for logs. */
  readonly name: string;
}

/**
 * What makes two methods of one queue distinct: the job name they take (`@Processor(queue,
 * { name })`; none: the catch-all). Methods with distinct names share the queue's one consumer
 * loop, which routes by `job.name` (`routeProcessors`); two with the same name (or two
 * catch-alls) would compete for the same jobs.
 */
const slotOf = (p: ProcessorMetadata): string => `${p.queue}\n${p.options.name ?? ''}`;

/**
 * Refuses two `@Processor` / `@Flow` methods on one queue (`InvalidOptionError`, EMQ_BAD_OPTION)
 * naming both: they would compete for the same jobs, each getting some at random.
 */
export function refuseSharedQueues(found: readonly DiscoveredProcessor[]): void {
  const first = new Map<string, DiscoveredProcessor>();
  for (const p of found) {
    const before = first.get(slotOf(p));
    if (!before) {
      first.set(slotOf(p), p);
      continue;
    }
    const twice = before.name === p.name ? ` (${p.name}'s provider is instantiated twice: provide it in one module only)` : '';
    const taking = p.options.name === undefined ? 'every job (no name: the catch-all)' : `job name "${p.options.name}"`;
    throw new InvalidOptionError(
      `queue "${p.queue}" has two consumers of ${taking}, ${before.name} and ${p.name}${twice}: they would split those jobs at random. ` +
        `One @Processor or @Flow method per queue and job name (docs/nest.md, "One processor per queue"): give each a distinct name, or use a second queue`,
    );
  }
}

/** Collects `@Processor` methods at module init, refusing two on one queue. No I/O happens here. */
@Injectable()
export class ProcessorExplorer implements OnModuleInit {
  /** What was found, in discovery order. */
  readonly processors: DiscoveredProcessor[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onModuleInit(): void {
    const found: DiscoveredProcessor[] = [];
    for (const { meta, bound, name } of findDecoratedMethods(this.discovery, this.scanner, getProcessorMetadata)) {
      found.push({ ...meta, handler: bound as JobHandler<unknown, unknown>, name });
    }
    refuseSharedQueues(found);
    this.processors.length = 0;
    this.processors.push(...found);
  }
}
