import type { BusService, QueueService } from '@echomq/nestjs';
import { MatchingEngine } from '../engine/matching-engine.js';
import type { Command, OrderState, Trade } from '../engine/engine.types.js';
import { commandTopic, TRADES_TOPIC } from '../exchange.names.js';
import { settlementFlow } from '../settlement/settlement.spec-builder.js';
import type { ExchangeStore } from '../store/exchange.store.js';

/** Commands read per step. */
const BATCH = 500;

/** What a shard's holder depends on. */
export interface ShardDeps {
  readonly queues: QueueService;
  readonly bus: BusService;
  readonly store: ExchangeStore;
}

/**
 * One shard held by this process: its engine, rebuilt from the shard's command log, and the
 * effects of each batch of commands — settlement flows, trades on the Bus, order views, depth —
 * made idempotently, then recorded by raising the shard's cursor. A holder that dies after some
 * effects of a batch and before the cursor has its successor redo that batch: flows are created
 * once (ids from the trade), views only move forward, and a trade published twice is folded once
 * by the market-data projections (keyed by trade id).
 */
export class ShardRun {
  private readonly engine: MatchingEngine;
  private readonly topic: string;
  /** The last command read (the next read starts after it). */
  private last: string | undefined;
  /** Positions up to this one have their effects done. */
  private done = -1;
  /** A batch applied to the engine whose effects are not all made yet. */
  private pending: { trades: Trade[]; states: OrderState[]; symbols: string[]; upTo: number } | undefined;

  constructor(
    readonly shard: number,
    private readonly deps: ShardDeps,
  ) {
    this.engine = new MatchingEngine(shard);
    this.topic = commandTopic(shard);
  }

  /**
   * Rebuilds the book: replays the whole log through the engine, making the effects of only the
   * commands past the stored cursor (those a dead holder may not have finished).
   */
  async recover(signal: AbortSignal): Promise<number> {
    this.done = await this.deps.store.cursor(this.shard);
    let n = 0;
    while (!signal.aborted && (await this.step()) > 0) n++;
    return n;
  }

  /**
   * Makes the effects of a batch that failed earlier (if any), then reads and applies the next
   * batch of commands; resolves to how many there were.
   */
  async step(): Promise<number> {
    await this.flush();
    const read: { id: string; cmd: Command; at: number }[] = [];
    const from = this.last;
    for await (const e of this.deps.bus.replay<Command>(this.topic, { ...(from ? { from } : {}), batch: BATCH })) {
      if (e.id === from) continue;
      read.push({ id: e.id, cmd: e.payload, at: e.at.getTime() });
      if (read.length === BATCH) break;
    }
    if (read.length === 0) return 0;
    const trades: Trade[] = [];
    const states = new Map<string, OrderState>();
    const symbols = new Set<string>();
    for (const r of read) {
      const pos = this.engine.position;
      const out = this.engine.apply(r.cmd, r.at);
      if (pos <= this.done) continue;
      trades.push(...out.trades);
      for (const s of out.orders) states.set(s.orderId, s);
      symbols.add(r.cmd.symbol);
    }
    this.last = read[read.length - 1].id;
    const upTo = this.engine.position - 1;
    if (upTo > this.done) {
      this.pending = { trades, states: [...states.values()], symbols: [...symbols], upTo };
      await this.flush();
    }
    return read.length;
  }

  /** Makes the pending batch's effects, then records them; a failure leaves the batch pending. */
  private async flush(): Promise<void> {
    const p = this.pending;
    if (!p) return;
    await this.effects(p.trades, p.states, p.symbols);
    await this.deps.store.raiseCursor(this.shard, p.upTo);
    this.done = p.upTo;
    this.pending = undefined;
  }

  private async effects(trades: Trade[], states: OrderState[], symbols: string[]): Promise<void> {
    for (let i = 0; i < trades.length; i += 300) await this.deps.queues.flowMany(trades.slice(i, i + 300).map(settlementFlow));
    for (let i = 0; i < trades.length; i += 1000) await this.deps.bus.publishMany<Trade>(TRADES_TOPIC, trades.slice(i, i + 1000));
    await this.deps.store.writeViews(states);
    await this.deps.store.setDepth(symbols.map((s) => this.engine.depth(s)));
  }
}
