import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { JobHandler } from '../queue/job.js';
import { getProcessorMetadata, type ProcessorMetadata } from './processor.decorator.js';

/** A discovered `@Processor` method, bound to its instance. */
export interface DiscoveredProcessor extends ProcessorMetadata {
  readonly handler: JobHandler<unknown, unknown>;
  /** `ClassName.method`, for logs. */
  readonly name: string;
}

/** Collects `@Processor` methods at module init. No I/O happens here. */
@Injectable()
export class ProcessorExplorer implements OnModuleInit {
  /** What was found, in discovery order. */
  readonly processors: DiscoveredProcessor[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onModuleInit(): void {
    this.processors.length = 0;
    for (const wrapper of this.discovery.getProviders()) {
      const instance: unknown = wrapper.instance;
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) continue;
      const proto = Object.getPrototypeOf(instance) as object;
      for (const key of this.scanner.getAllMethodNames(proto)) {
        const method = (instance as Record<string, unknown>)[key];
        const meta = getProcessorMetadata(method);
        if (!meta) continue;
        this.processors.push({
          ...meta,
          handler: (method as JobHandler<unknown, unknown>).bind(instance),
          name: `${(instance as object).constructor.name}.${key}`,
        });
      }
    }
  }
}
