import { Inject, Injectable, Logger, type BeforeApplicationShutdown, type OnApplicationBootstrap } from '@nestjs/common';
import { BusService, CoordinationService, QueueService, type Election, type LeaderTerm } from '@echomq/nestjs';
import { SHARDS } from '../engine/ids.js';
import { commandTopic } from '../exchange.names.js';
import { ExchangeStore, StaleTokenError } from '../store/exchange.store.js';
import { MATCHING_OPTIONS, shardRole, type MatchingOptions } from './matching.options.js';
import { ShardRun } from './shard-run.js';

/** How long the holder waits for a wake-up signal before reading its log anyway. */
const POLL_MS = 250;

/** Resolves after `ms`, or at once when `signal` aborts or `wake.fire()` is called. */
function pause(ms: number, signal: AbortSignal, wake: { fire?: () => void }): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      wake.fire = undefined;
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done);
    wake.fire = done;
  });
}

/** A shard this process holds: its term (lease and fencing token) and its run. */
interface Holding {
  readonly term: LeaderTerm;
  readonly run: ShardRun;
  readonly wake: { fire?: () => void };
}

/** Who holds a shard, as the lease says. */
export interface ShardHolder {
  readonly shard: number;
  /** The lease owner (a process's coordination identity), or null when nobody holds it. */
  readonly owner: string | null;
  /** The holder's fencing token (decimal), or null. */
  readonly token: string | null;
  /** True when this process is the holder. */
  readonly mine: boolean;
}

/**
 * Single writer per shard, by leader election: every instance campaigns for each shard's role
 * (`exchange.shard.<n>`, a fenced lease of `leaseMs`); the winner rebuilds that shard's book
 * (latest snapshot + the log after it) and matches while its term lasts (`term.signal` not
 * aborted). Its cursor and snapshot writes carry the term's token, which the store checks
 * against the shard's fence, so a holder that lost its lease without noticing (paused,
 * partitioned) cannot move them after its successor wrote. A clean shutdown finishes the batch
 * in hand and resigns, so another instance takes over at its next poll; after a crash, once the
 * lease expires (≤ lease + one poll).
 */
@Injectable()
export class BookHolder implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly log = new Logger('BookHolder');
  private stopping = false;
  private readonly elections: Election[] = [];
  private readonly holdings = new Map<number, Holding>();
  /** Per shard, the running (or last) term's loop, so a new term starts after the old one ended. */
  private readonly loops = new Map<number, Promise<void>>();

  constructor(
    private readonly coordination: CoordinationService,
    private readonly queues: QueueService,
    private readonly bus: BusService,
    private readonly store: ExchangeStore,
    @Inject(MATCHING_OPTIONS) private readonly opts: MatchingOptions,
  ) {}

  /** Shards this instance holds (and matches) right now. */
  held(): number[] {
    return [...this.holdings.keys()].sort((a, b) => a - b);
  }

  /** Who holds each shard, read from the leases. */
  async holders(): Promise<ShardHolder[]> {
    return Promise.all(
      Array.from({ length: SHARDS }, async (_, shard) => {
        const r = await this.coordination.read(shardRole(shard));
        const mine = this.holdings.get(shard);
        return { shard, owner: r.held ? r.owner : null, token: r.held && r.token !== null ? r.token.toString() : null, mine: mine !== undefined && !mine.term.signal.aborted };
      }),
    );
  }

  /** Campaigns for every shard. */
  onApplicationBootstrap(): void {
    for (let shard = 0; shard < SHARDS; shard++) {
      const onElected = (term: LeaderTerm): void => {
        const prev = this.loops.get(shard) ?? Promise.resolve();
        const next = prev.then(() => this.hold(shard, term)).catch((err: unknown) => this.log.error(`shard ${shard}: ${err instanceof Error ? err.message : String(err)}`));
        this.loops.set(shard, next);
      };
      this.elections.push(this.coordination.elect(shardRole(shard), { ttlMs: this.opts.leaseMs, onElected }));
    }
  }

  /** Holds one shard for one term: claims its fence, rebuilds, matches until the term ends. */
  private async hold(shard: number, term: LeaderTerm): Promise<void> {
    if (this.stopping || term.signal.aborted) return term.resign();
    const run = new ShardRun(shard, { queues: this.queues, bus: this.bus, store: this.store }, term.token, this.opts);
    const wake: { fire?: () => void } = {};
    const sub = this.bus.signals(commandTopic(shard)).subscribe({ next: () => wake.fire?.(), error: () => undefined });
    try {
      const t0 = Date.now();
      await this.store.claimShard(shard, term.token);
      await run.retain();
      const r = await run.recover(term.signal);
      this.holdings.set(shard, { term, run, wake });
      this.log.log(
        `holding shard ${shard} (token ${term.token}; book rebuilt in ${Date.now() - t0} ms from ` +
          `${r.fromPosition > 0 ? `the snapshot at ${r.fromPosition}` : 'the start of the log'} + ${r.replayed} commands)`,
      );
      while (!this.stopping && !term.signal.aborted) {
        try {
          if ((await run.step()) === 0) {
            await run.snapshotIfDue();
            await pause(POLL_MS, term.signal, wake);
          }
        } catch (err) {
          if (err instanceof StaleTokenError) throw err;
          // Valkey unreachable or a refused write: the batch is redone from the same place.
          this.log.warn(`shard ${shard}: ${err instanceof Error ? err.message : String(err)}; retrying`);
          await pause(500, term.signal, wake);
        }
      }
      // A clean stop leaves a snapshot at the end of what it matched: the successor replays nothing.
      if (!term.signal.aborted) await run.snapshotIfDue(true).catch((err: unknown) => this.log.warn(`shard ${shard}: last snapshot: ${String(err)}`));
    } catch (err) {
      if (!(err instanceof StaleTokenError)) throw err;
      this.log.warn(`shard ${shard}: a newer holder wrote (${err.message}); giving the shard up`);
    } finally {
      sub.unsubscribe();
      if (this.holdings.get(shard)?.term === term) this.holdings.delete(shard);
      if (!term.signal.aborted) await term.resign().catch(() => undefined);
    }
  }

  /**
   * Stops matching before the connection closes: each holder finishes the batch in hand, then
   * resigns, so the other instances take the shards at their next poll.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    for (const h of this.holdings.values()) h.wake.fire?.();
    await Promise.all(this.loops.values());
    await Promise.all(this.elections.map((e) => e.stop()));
  }
}
