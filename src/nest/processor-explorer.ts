import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { JobHandler } from '../queue/job.js';
import { findDecoratedMethods } from './method-scanner.js';
import { getProcessorMetadata, type ProcessorMetadata } from './processor-decorator.js';

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
    for (const { meta, bound, name } of findDecoratedMethods(this.discovery, this.scanner, getProcessorMetadata)) {
      this.processors.push({ ...meta, handler: bound as JobHandler<unknown, unknown>, name });
    }
  }
}
