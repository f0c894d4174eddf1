import { Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { InvalidOptionError } from '../core/errors.js';
import type { LeaderTerm } from '../coordination/index.js';
import { findDecoratedMethods } from './method-scanner.js';
import { checkLeaderOptions, getLeaderMetadata, type LeaderMetadata } from './leader-decorator.js';

/** A discovered `@Leader` method, bound to its instance. */
export interface DiscoveredLeader extends LeaderMetadata {
  readonly run: (term: LeaderTerm) => unknown;
  /** `ClassName.method`, for logs. */
  readonly name: string;
}

/**
 * Collects `@Leader` methods at module init; no I/O happens here. Two methods of one app on the
 * same role are refused (`InvalidOptionError`, EMQ_BAD_OPTION, naming both): one process holds a
 * role's lease once, so they could not lead apart, and which one ran would be an accident.
 */
@Injectable()
export class LeaderExplorer implements OnModuleInit {
  /** What was found, in discovery order. */
  readonly leaders: DiscoveredLeader[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {}

  onModuleInit(): void {
    const found: DiscoveredLeader[] = [];
    const seen = new Map<string, string>();
    for (const { meta, bound, name } of findDecoratedMethods(this.discovery, this.scanner, getLeaderMetadata)) {
      checkLeaderOptions(meta.options, `@Leader("${meta.role}") options of ${name}`);
      const other = seen.get(meta.role);
      if (other) {
        const twice = other === name ? ` (${name}'s provider is instantiated twice: provide it in one module only)` : '';
        throw new InvalidOptionError(`leader role "${meta.role}" is claimed by ${other} and ${name}${twice}: one @Leader method per role`);
      }
      seen.set(meta.role, name);
      found.push({ ...meta, run: bound as (term: LeaderTerm) => unknown, name });
    }
    this.leaders.length = 0;
    this.leaders.push(...found);
  }
}
