import { BadRequestException, Controller, Get, Inject, Query, UseGuards } from '@nestjs/common';
import { BusAdmin, CoordinationService, QueueService } from '@echomq/nestjs';
import { SHARDS } from '../engine/ids.js';
import { CANDLES_QUEUE, FILLS_QUEUE, ORDERS_QUEUE, SETTLEMENTS_QUEUE, TRADES_TOPIC } from '../exchange.names.js';
import { ACK_TIMEOUT_MS } from '../market/market-data.js';
import { BookHolder } from '../matching/book-holder.js';
import { ExchangeStore } from '../store/exchange.store.js';
import { sampleCount } from '../store/stats.store.js';
import { AdminGuard } from './admin.guard.js';
import { INSTANCE_NAME } from './page.controller.js';

/** The queues whose backlog `/stats` shows. */
export const STATS_QUEUES = [ORDERS_QUEUE, FILLS_QUEUE, SETTLEMENTS_QUEUE, CANDLES_QUEUE] as const;
/** The market-data groups on `trades` whose pending entries `/stats` shows. */
export const MARKET_GROUPS = ['candles', 'risk'] as const;

/** A member of a market-data group and the entries it holds unacknowledged. */
export interface GroupMember {
  readonly group: string;
  /** The Bus consumer name (`<host>-<pid>-<hex>`: the pid names the instance). */
  readonly consumer: string;
  /** Entries delivered to it and not acknowledged. */
  readonly pending: number;
  /** Since its last attempted read (ms, `XINFO CONSUMERS` idle): a live member reads at least every 5 s. */
  readonly idleMs: number;
  /** Silent past the ack timeout: a dead (or stalled) instance's; its pending entries go to a live member. */
  readonly silent: boolean;
}

/** The reply of `GET /stats`. */
export interface ExchangeStats {
  /** Who answered: the instance's name, pid and coordination identity (the `owner` of its shard leases). */
  readonly self: { readonly instance: string; readonly pid: number; readonly owner: string };
  /** Commands matched so far (Σ over shards of the cursor + 1). */
  readonly sequenced: number;
  /** Trades the ledger settled (each once, whatever re-ran). */
  readonly settled: number;
  /** Jobs not finished yet (pending + active + scheduled), per queue. */
  readonly backlog: Record<string, number>;
  /** Jobs buried (dead), per queue. */
  readonly dead: Record<string, number>;
  /** Trade → settled latency (ms) over the newest `last` settlements; `samples` = settlements with a sample (one each). */
  readonly latency: { readonly n: number; readonly samples: number; readonly p50?: number; readonly p99?: number };
  /** Per market-data group: entries delivered and not acknowledged, not yet delivered (lag), and per member. */
  readonly marketData: { readonly group: string; readonly pending: number; readonly lag: number | null }[];
  readonly members: GroupMember[];
  /** Σ pending of silent members: events of a dead instance waiting for their ack timeout (5 s) to be re-delivered. */
  readonly redeliveriesPending: number;
  /** Each shard's holder (lease owner, or null) and the shards held per owner. */
  readonly shards: { readonly shard: number; readonly owner: string | null; readonly mine: boolean }[];
  readonly heldBy: Record<string, number[]>;
}

/** The `q` quantile (0..1) of sorted values, nearest rank. */
export function quantile(sorted: readonly number[], q: number): number | undefined {
  if (sorted.length === 0) return undefined;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** `XINFO CONSUMERS` rows as records (RESP2: flat field/value arrays). */
function rows(reply: unknown): Record<string, string | number>[] {
  if (!Array.isArray(reply)) return [];
  return reply.map((r: unknown) => {
    const o: Record<string, string | number> = {};
    if (Array.isArray(r)) for (let i = 0; i + 1 < r.length; i += 2) o[String(r[i])] = r[i + 1] as string | number;
    return o;
  });
}

/**
 * `GET /stats` (admin key): progress counters for the load script and operators — matching,
 * settlement (each trade once), queue backlogs, the market-data groups' unacknowledged events
 * per member (those of a dead instance included until they are re-delivered), and who holds
 * which shard.
 */
@Controller('stats')
@UseGuards(AdminGuard)
export class StatsController {
  constructor(
    private readonly queues: QueueService,
    private readonly busAdmin: BusAdmin,
    private readonly coordination: CoordinationService,
    private readonly store: ExchangeStore,
    private readonly holder: BookHolder,
    @Inject(INSTANCE_NAME) private readonly instance: string,
  ) {}

  /** Progress counters; `?last=N` (1..100,000, default 1000) bounds the latency sample. */
  @Get()
  async stats(@Query('last') last = '1000'): Promise<ExchangeStats> {
    const n = Number(last);
    if (!/^\d+$/.test(last) || n < 1 || n > 100_000) throw new BadRequestException('last must be an integer in 1..100000');
    const [cursors, counts, lat, samples, settled, groups, members, shards] = await Promise.all([
      Promise.all(Array.from({ length: SHARDS }, (_, s) => this.store.cursor(s))),
      Promise.all(STATS_QUEUES.map((q) => this.queues.counts(q))),
      this.store.latencies(n),
      sampleCount(this.store.client),
      this.store.settledCount(),
      this.busAdmin.groups(TRADES_TOPIC).catch(() => []),
      this.members(),
      this.holder.holders(),
    ]);
    lat.sort((a, b) => a - b);
    const heldBy: Record<string, number[]> = {};
    for (const s of shards) if (s.owner !== null) (heldBy[s.owner] ??= []).push(s.shard);
    return {
      self: { instance: this.instance, pid: process.pid, owner: this.coordination.owner },
      sequenced: cursors.reduce((s, c) => s + c + 1, 0),
      settled,
      backlog: Object.fromEntries(STATS_QUEUES.map((q, i) => [q, counts[i].pending + counts[i].active + counts[i].scheduled])),
      dead: Object.fromEntries(STATS_QUEUES.map((q, i) => [q, counts[i].dead])),
      latency: { n: lat.length, samples, p50: quantile(lat, 0.5), p99: quantile(lat, 0.99) },
      marketData: groups.filter((g) => (MARKET_GROUPS as readonly string[]).includes(g.name)).map((g) => ({ group: g.name, pending: g.pending, lag: g.lag })),
      members,
      redeliveriesPending: members.filter((m) => m.silent).reduce((s, m) => s + m.pending, 0),
      shards: shards.map((s) => ({ shard: s.shard, owner: s.owner, mine: s.mine })),
      heldBy,
    };
  }

  /**
   * Each market-data member with its pending count and idle time, from `XINFO CONSUMERS` on the
   * topic's log (`emq:{trades}:bus:log`, docs/bus.md "Keys"): BusAdmin gives per-group totals,
   * this the per-member split an operator needs to see a dead instance's share.
   */
  private async members(): Promise<GroupMember[]> {
    const log = `emq:{${TRADES_TOPIC}}:bus:log`;
    const out: GroupMember[] = [];
    for (const group of MARKET_GROUPS) {
      const reply = await this.store.client.call('XINFO', 'CONSUMERS', log, group).catch(() => []);
      for (const r of rows(reply)) {
        const idleMs = Number(r.idle ?? 0);
        out.push({ group, consumer: String(r.name), pending: Number(r.pending ?? 0), idleMs, silent: idleMs > ACK_TIMEOUT_MS });
      }
    }
    return out;
  }
}
