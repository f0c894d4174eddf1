import type { BusService, QueueService } from '@echomq/nestjs';
import { MatchingEngine } from '../engine/matching-engine.js';
import type { Command, OrderState, Trade } from '../engine/engine.types.js';
import { BOOKS_CHANGED_TOPIC, commandTopic, TRADES_TOPIC } from '../exchange.names.js';
import type { DepthChanged } from '../market/market.events.js';
import { settlementFlow } from '../settlement/settlement.spec-builder.js';
import type { ExchangeStore } from '../store/exchange.store.js';
import type { MatchingOptions } from './matching.options.js';

/** Commands read per step. */
const BATCH = 500;

/** What a shard's holder depends on. */
export interface ShardDeps {
  readonly queues: QueueService;
  readonly bus: BusService;
  readonly store: ExchangeStore;
}

/** What a rebuild did. */
export interface Recovery {
  /** The log position the snapshot it started from was taken at (0: no snapshot, a full replay). */
  readonly fromPosition: number;
  /** Commands replayed after it. */
  readonly replayed: number;
}

/** The log after a snapshot is missing entries: the log was trimmed past the snapshot. */
export class LogGapError extends Error {}

/**
 * One shard held by this process for one leadership term (fencing token `token`): its engine,
 * rebuilt from the shard's latest snapshot and the log after it, and the effects of each batch
 * of commands — settlement flows, trades on the Bus, order views, depth — made idempotently,
 * then recorded by raising the shard's cursor. The cursor and the snapshots are the shard's own
 * state: their writes carry the token and the store refuses a token older than one it has seen.
 * A holder that dies after some effects of a batch and before the cursor has its successor redo
 * that batch: flows are created once (ids from the trade), views only move forward, and a trade
 * published twice is folded once by the market-data projections (keyed by trade id).
 */
export class ShardRun {
  private engine: MatchingEngine;
  private readonly topic: string;
  /** The last command read (the next read starts after it), and its log time. */
  private last: string | undefined;
  private lastAt = 0;
  /** Set after a restore: the next read must start with this entry (the snapshot's last). */
  private expectFirst: string | undefined;
  /** Positions up to this one have their effects done. */
  private done = -1;
  /** A batch applied to the engine whose effects are not all made yet. */
  private pending: { trades: Trade[]; states: OrderState[]; symbols: string[]; upTo: number } | undefined;
  /** The position and time of the latest snapshot written or restored. */
  private snapPosition = 0;
  private snapTime = Date.now();

  constructor(
    readonly shard: number,
    private readonly deps: ShardDeps,
    private readonly token: bigint,
    private readonly opts: Pick<MatchingOptions, 'snapshotEvery' | 'snapshotMs' | 'logRetentionMs'>,
  ) {
    this.engine = new MatchingEngine(shard);
    this.topic = commandTopic(shard);
  }

  /** The engine (tests compare it with a full replay). */
  get matching(): MatchingEngine {
    return this.engine;
  }

  /**
   * Sets the shard log's retention: entries older than `logRetentionMs` are deleted (no archive);
   * the snapshots, written at least every `snapshotMs`, cover them.
   */
  async retain(): Promise<void> {
    await this.deps.bus.setRetention(this.topic, { maxAgeMs: this.opts.logRetentionMs, archive: false });
  }

  /**
   * Rebuilds the book: restores the latest snapshot (if any) and replays the log after it
   * (everything when there is none), making the effects of only the commands past the stored
   * cursor (those a dead holder may not have finished).
   */
  async recover(signal: AbortSignal, useSnapshot = true): Promise<Recovery> {
    this.done = await this.deps.store.cursor(this.shard);
    const snap = useSnapshot ? await this.deps.store.snapshot(this.shard) : undefined;
    if (snap) {
      this.engine = MatchingEngine.restore(this.shard, snap.engine);
      this.last = this.expectFirst = snap.lastId;
      this.lastAt = snap.lastAt;
      this.snapPosition = snap.engine.position;
    }
    const fromPosition = this.snapPosition;
    let replayed = 0;
    for (let n = await this.step(); n > 0 && !signal.aborted; n = await this.step()) replayed += n;
    return { fromPosition, replayed };
  }

  /**
   * Makes the effects of a batch that failed earlier (if any), then reads and applies the next
   * batch of commands; resolves to how many there were.
   */
  async step(): Promise<number> {
    await this.flush();
    const read: { id: string; cmd: Command; at: number }[] = [];
    const from = this.last;
    let first = true;
    for await (const e of this.deps.bus.replay<Command>(this.topic, { ...(from ? { from } : {}), batch: BATCH })) {
      if (first && this.expectFirst) this.checkContinuity(e.id);
      first = false;
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
    this.lastAt = read[read.length - 1].at;
    const upTo = this.engine.position - 1;
    if (upTo > this.done) {
      this.pending = { trades, states: [...states.values()], symbols: [...symbols], upTo };
      await this.flush();
    }
    await this.snapshotIfDue();
    return read.length;
  }

  /**
   * Writes a snapshot when `snapshotEvery` commands or `snapshotMs` passed since the last one
   * (and only once every effect before it is done, so a rebuild from it misses none).
   */
  async snapshotIfDue(force = false): Promise<boolean> {
    const position = this.engine.position;
    if (this.pending || this.last === undefined || position <= this.snapPosition || position - 1 > this.done) return false;
    if (!force && position - this.snapPosition < this.opts.snapshotEvery && Date.now() - this.snapTime < this.opts.snapshotMs) return false;
    const engine = this.engine.snapshot();
    await this.deps.store.writeSnapshot(this.shard, this.token, { engine, lastId: this.last, lastAt: this.lastAt, takenAt: Date.now(), token: this.token.toString() });
    this.snapPosition = position;
    this.snapTime = Date.now();
    return true;
  }

  /**
   * After a restore the log must still hold the snapshot's last entry, else entries after it may
   * be gone too. Retention only deletes entries older than `logRetentionMs`, so a missing entry
   * younger than that is a gap: refused (the shard stops, loudly) rather than matched wrongly.
   */
  private checkContinuity(firstId: string): void {
    const expected = this.expectFirst;
    this.expectFirst = undefined;
    if (firstId === expected) return;
    if (Date.now() - this.lastAt < this.opts.logRetentionMs) {
      throw new LogGapError(`shard ${this.shard}: the log no longer holds ${expected}, the last entry of the snapshot; it was trimmed past the snapshot`);
    }
  }

  /** Makes the pending batch's effects, then records them; a failure leaves the batch pending. */
  private async flush(): Promise<void> {
    const p = this.pending;
    if (!p) return;
    await this.effects(p.trades, p.states, p.symbols);
    await this.deps.store.raiseCursor(this.shard, this.token, p.upTo);
    this.done = p.upTo;
    this.pending = undefined;
  }

  private async effects(trades: Trade[], states: OrderState[], symbols: string[]): Promise<void> {
    for (let i = 0; i < trades.length; i += 300) await this.deps.queues.flowMany(trades.slice(i, i + 300).map(settlementFlow));
    for (let i = 0; i < trades.length; i += 1000) await this.deps.bus.publishMany<Trade>(TRADES_TOPIC, trades.slice(i, i + 1000));
    await this.deps.store.writeViews(states);
    // Frees what ended orders (filled, cancelled) still reserve, once per order id (B2, the ledger).
    await this.deps.store.releaseEnded(states);
    await this.deps.store.setDepth(symbols.map((s) => this.engine.depth(s)));
    // After the depth is stored: the books cache follows this topic and drops its pages (B5).
    if (symbols.length > 0) await this.deps.bus.publish<DepthChanged>(BOOKS_CHANGED_TOPIC, { shard: this.shard, symbols });
  }
}
