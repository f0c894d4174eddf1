import { Injectable } from '@nestjs/common';
import { CacheEvict, Cached } from '@echomq/nestjs';
import { fromTicks } from '../engine/engine.types.js';
import { ExchangeStore } from '../store/exchange.store.js';

/** An account's settled position, as `GET /accounts/:id/positions` shows it. */
export interface PositionsView {
  readonly account: string;
  /** Cash moved by settlement (negative after buying), in price units. */
  readonly cash: number;
  /** Units held per symbol (negative: short). */
  readonly units: Record<string, number>;
  /** When this value was read from the ledger (shows whether a reply came from the cache). */
  readonly readAt: string;
}

/** The cache tag of one account's cached values. */
export const accountTag = (account: string): string => `acct.${account}`;

/** How long a cached position may be served before it is read again (the invalidation usually comes first). */
export const POSITIONS_TTL_MS = 30_000;

/**
 * Positions through EchoMQ's coherent cache: `positions(account)` is cached per account (its
 * scope is the account, part of the key), tagged with the account; settlement calls `changed`,
 * which invalidates the tag — in Valkey (L2) and, through the cache's log and signal, in every
 * instance's in-memory L1 (docs/cache.md, "The staleness bound").
 */
@Injectable()
export class PositionsService {
  constructor(private readonly store: ExchangeStore) {}

  /** An account's settled position, from the ledger (through the cache). */
  @Cached({ scope: (account: string) => account, key: (account: string) => `positions.${account}`, tags: (account: string) => [accountTag(account)], ttlMs: POSITIONS_TTL_MS })
  async positions(account: string): Promise<PositionsView> {
    const h = await this.store.holdings(account);
    return { account, cash: fromTicks(h.cashTicks), units: h.units, readAt: new Date().toISOString() };
  }

  /** Invalidates the cached positions of the given accounts (after settlement moved them). */
  @CacheEvict({ tags: (...accounts: string[]) => accounts.map(accountTag) })
  async changed(...accounts: string[]): Promise<number> {
    return accounts.length;
  }
}
