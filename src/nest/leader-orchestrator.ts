import { Inject, Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { escapeControls } from '../core/control-chars.js';
import { CoordinationService, type Election, type LeaderTerm } from '../coordination/index.js';
import { errorText } from '../queue/consumer/index.js';
import { ECHOMQ_OPTIONS } from './echomq-constants.js';
import type { EchoMqModuleOptions } from './echomq-options.js';
import { LeaderExplorer, type DiscoveredLeader } from './leader-explorer.js';

/**
 * Campaigns for every `@Leader` role once the application has bootstrapped
 * (`CoordinationService.elect`), and calls the role's method with each term this process wins;
 * before shutdown stops the campaigns (resigning the terms held, so another instance takes over
 * at once), waits up to `shutdownTimeoutMs` for the methods to return, and closes the
 * `CoordinationService` (every lease and election of the app released) before the connection
 * closes. `consumers: false` campaigns for nothing.
 */
@Injectable()
export class LeaderOrchestrator implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('EchoMQ');
  private readonly elections: Election[] = [];
  /** The method calls still running, across roles and terms. */
  private readonly running = new Set<Promise<void>>();

  constructor(
    @Inject(ECHOMQ_OPTIONS) private readonly options: EchoMqModuleOptions,
    private readonly coordination: CoordinationService,
    private readonly explorer: LeaderExplorer,
  ) {}

  /** The campaigns running, one per `@Leader` role. */
  get campaigns(): readonly Election[] {
    return this.elections;
  }

  onApplicationBootstrap(): void {
    if (this.options.consumers === false) return;
    for (const leader of this.explorer.leaders) {
      // One call of a role's method at a time: a term won while the previous call still runs
      // (it ignored its signal) waits for it, and is skipped when lost meanwhile.
      let last: Promise<void> = Promise.resolve();
      const onElected = (term: LeaderTerm): void => {
        const call = last.then(() => this.lead(leader, term));
        last = call;
        this.running.add(call);
        void call.finally(() => this.running.delete(call));
      };
      this.elections.push(this.coordination.elect(leader.role, { ttlMs: leader.options.ttlMs, onElected }));
      this.logger.log(`${leader.name} campaigns for leader role "${leader.role}"`);
    }
  }

  /** Runs one term: the method, then (when it threw) the resignation. Never rejects. */
  private async lead(leader: DiscoveredLeader, term: LeaderTerm): Promise<void> {
    if (term.signal.aborted) return;
    this.logger.log(`${leader.name} leads "${leader.role}" (token ${term.token})`);
    try {
      await leader.run(term);
    } catch (err) {
      this.logger.error(`${leader.name}, leader of "${leader.role}", threw: ${escapeControls(errorText(err))}; the term is resigned, the campaign goes on`);
      await term.resign().catch((e: unknown) => this.logger.warn(`resigning "${leader.role}": ${escapeControls(errorText(e))}`));
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    const stopping = this.elections.splice(0);
    await Promise.all(stopping.map((e) => e.stop().catch((err: unknown) => this.logger.warn(`stopping the campaign for "${e.role}": ${escapeControls(errorText(err))}`))));
    if (this.running.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), this.options.shutdownTimeoutMs ?? 10_000)));
      const outcome = await Promise.race([Promise.all([...this.running]), deadline]);
      clearTimeout(timer);
      if (outcome === 'late') this.logger.warn(`${this.running.size} @Leader method(s) still running after shutdownTimeoutMs: their terms were resigned`);
    }
    await this.coordination.close();
  }
}
