import { Injectable, Logger } from '@nestjs/common';
import { CacheEvict } from '@echomq/nestjs';
import { formatUnits } from '../engine/money.js';
import { ExchangeStore } from '../store/exchange.store.js';

/** An account's position, as `GET /accounts/:id/positions` shows it: every amount exact. */
export interface PositionsView {
  readonly account: string;
  /** Cash held (opening balance ± settled trades), in units: a decimal string with 4 decimals ("9999930.0000"). */
  readonly cash: string;
  /** Cash reserved by open buy orders, in units (decimal string). */
  readonly reserved: string;
  /** cash − reserved: what a new buy may reserve, in units (decimal string). */
  readonly available: string;
  /** Per symbol: whole units held and reserved by open sell orders. */
  readonly units: Record<string, { readonly held: number; readonly reserved: number }>;
  /** When this value was read from the ledger (shows whether a reply came from the cache). */
  readonly readAt: string;
}

/** The cache tag of one account's cached values. */
export const accountTag = (account: string): string => `acct.${account}`;

/** How long a cached position may be served before it is read again (the invalidation usually comes first). */
export const POSITIONS_TTL_MS = 30_000;

/**
 * Positions from the ledger. The HTTP route caches them per user (`CacheInterceptor`,
 * `@CacheScope('user')`, tagged with the account); whatever moves an account's ledger calls
 * `changed`, which invalidates the tag — in Valkey (L2) and, through the cache's log and signal,
 * in every instance's in-memory L1 (docs/cache.md, "The staleness bound"): settlement (cash and
 * units), order entry (a new reservation) and the shard holders (`releaseEnded`, through the
 * store's `onLedgerMoved`).
 */
@Injectable()
export class PositionsService {
  private readonly logger = new Logger('Positions');

  constructor(private readonly store: ExchangeStore) {
    store.onLedgerMoved((accounts) =>
      this.changed(...accounts).then(
        () => undefined,
        (err: unknown) => this.logger.warn(`positions of ${accounts.length} accounts not evicted (the TTL bounds them): ${String(err)}`),
      ),
    );
  }

  /** An account's position, read from the ledger now. */
  async positions(account: string): Promise<PositionsView> {
    const l = await this.store.holdings(account);
    const units: Record<string, { held: number; reserved: number }> = {};
    for (const [sym, u] of Object.entries(l.units)) units[sym] = { held: Number(u.held), reserved: Number(u.reserved) };
    return {
      account,
      cash: formatUnits(l.cashTicks),
      reserved: formatUnits(l.reservedTicks),
      available: formatUnits(l.cashTicks - l.reservedTicks),
      units,
      readAt: new Date().toISOString(),
    };
  }

  /** Invalidates the cached positions of the given accounts (after their ledger moved). */
  @CacheEvict({ tags: (...accounts: string[]) => accounts.map(accountTag) })
  async changed(...accounts: string[]): Promise<number> {
    return accounts.length;
  }
}
