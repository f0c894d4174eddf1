import { BadRequestException, Controller, Get, Param } from '@nestjs/common';
import { fromTicks } from '../engine/engine.types.js';
import { ExchangeStore } from '../store/exchange.store.js';
import { PositionsService, type PositionsView } from './positions.service.js';

/** An account's exposure as `GET /accounts/:id/risk` shows it. */
export interface RiskView {
  readonly account: string;
  readonly units: Record<string, number>;
  readonly netNotional: number;
  readonly grossNotional: number;
}

const ACCOUNT_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$/;

function checkAccount(id: string): string {
  if (!ACCOUNT_RE.test(id)) throw new BadRequestException(`account must be 1-32 letters, digits, "_", "." or "-"; got ${JSON.stringify(id.slice(0, 40))}`);
  return id;
}

/** Per-account reads: settled positions (cached, coherent) and the risk view (from the trade stream). */
@Controller('accounts')
export class AccountsController {
  constructor(
    private readonly positions: PositionsService,
    private readonly store: ExchangeStore,
  ) {}

  /** Settled cash and units, through `@Cached` (per-account scope, invalidated by settlement). */
  @Get(':id/positions')
  get(@Param('id') id: string): Promise<PositionsView> {
    return this.positions.positions(checkAccount(id));
  }

  /** Exposure from every trade so far (settled or not), built by the `risk` group. */
  @Get(':id/risk')
  async risk(@Param('id') id: string): Promise<RiskView> {
    const e = await this.store.exposure(checkAccount(id));
    return { account: id, units: e.units, netNotional: fromTicks(e.netNotionalTicks), grossNotional: fromTicks(e.grossNotionalTicks) };
  }
}
