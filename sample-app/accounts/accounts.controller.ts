import { Controller, Get, UseGuards, UseInterceptors } from '@nestjs/common';
import { CacheInterceptor, CacheScope, type HttpRequestLike } from '@echomq/nestjs';
import { ApiKeyGuard, OwnAccount } from '../auth/api-key.guard.js';
import { CurrentAccount } from '../auth/current-account.decorator.js';
import { formatUnits } from '../engine/money.js';
import { ExchangeStore } from '../store/exchange.store.js';
import { accountTag, PositionsService, POSITIONS_TTL_MS, type PositionsView } from './positions.service.js';

/** An account's exposure as `GET /accounts/:id/risk` shows it. */
export interface RiskView {
  readonly account: string;
  readonly units: Record<string, number>;
  /** In units, a decimal string. */
  readonly netNotional: string;
  /** In units, a decimal string. */
  readonly grossNotional: string;
}

/** The cache tag of a positions response: its owner's account (set by `ApiKeyGuard`). */
const ownerTag = (req: HttpRequestLike): string[] => [accountTag(String(req.user?.id))];

/**
 * Per-account reads, for the key's own account only (`ApiKeyGuard` with `@OwnAccount('id')`:
 * 401 without a known key, 403 for another account's `:id`): positions (cached per user,
 * invalidated when the ledger moves) and the risk view (from the trade stream).
 */
@Controller('accounts')
@UseGuards(ApiKeyGuard)
@OwnAccount('id')
export class AccountsController {
  constructor(
    private readonly positions: PositionsService,
    private readonly store: ExchangeStore,
  ) {}

  /**
   * Cash, reservations and units, exact. Cached per user (`X-Cache: HIT|MISS`): the key carries
   * the authenticated account, so one account's response is never served to another, and the
   * entry is tagged with the account, so `PositionsService.changed` evicts it everywhere.
   */
  @Get(':id/positions')
  @UseInterceptors(CacheInterceptor)
  @CacheScope('user', { ttlMs: POSITIONS_TTL_MS, tags: ownerTag })
  get(@CurrentAccount() account: string): Promise<PositionsView> {
    return this.positions.positions(account);
  }

  /** Exposure from every trade so far (settled or not), built by the `risk` group. */
  @Get(':id/risk')
  async risk(@CurrentAccount() account: string): Promise<RiskView> {
    const e = await this.store.exposure(account);
    return { account, units: e.units, netNotional: formatUnits(BigInt(e.netNotionalTicks)), grossNotional: formatUnits(BigInt(e.grossNotionalTicks)) };
  }
}
