import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { EXCHANGE_CONFIG, type ExchangeConfig } from '../config/exchange.config.js';
import { ExchangeStore } from '../store/exchange.store.js';

/**
 * Funds every configured account with its opening cash and units when an instance starts, once
 * per account for the life of the ledger (its `funded` set): a restart, a second instance, or
 * both starting at once fund nothing twice; an account added to the configuration later is
 * funded at the next start.
 */
@Injectable()
export class OpeningBalances implements OnModuleInit {
  private readonly logger = new Logger('Ledger');

  constructor(
    private readonly store: ExchangeStore,
    @Inject(EXCHANGE_CONFIG) private readonly config: ExchangeConfig,
  ) {}

  /** Funds the accounts not funded yet. */
  async onModuleInit(): Promise<void> {
    let funded = 0;
    for (const a of this.config.accounts.values()) if (await this.store.fund(a.id, a.cashTicks, a.units)) funded++;
    if (funded > 0) this.logger.log(`funded ${funded} account(s) with their opening balances`);
  }
}
