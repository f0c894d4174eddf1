/** Helpers of the sample exchange's end-to-end tests: instances, order flows, the reference run. */
import 'reflect-metadata';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { BusService, QueueService } from '../../src/index.js';
import { EchoMqTestingModule } from '../../src/testing.js';
import { AppModule, type AppOptions } from '../../sample-app/app.module.js';
import { buildExchangeConfig, loadExchangeConfig, type ExchangeConfig, type ExchangeConfigFile } from '../../sample-app/config/exchange.config.js';
import { formatUnits } from '../../sample-app/engine/money.js';
import { keyHeader } from '../../sample-app/load/order-flow.js';
import { MatchingEngine } from '../../sample-app/engine/matching-engine.js';
import type { Command, OrderState, Trade } from '../../sample-app/engine/engine.types.js';
import { SHARDS } from '../../sample-app/engine/ids.js';
import { commandTopic, FILLS_QUEUE, ORDERS_QUEUE, SETTLEMENTS_QUEUE, TRADES_TOPIC } from '../../sample-app/exchange.names.js';
import type { ExchangeStore } from '../../sample-app/store/exchange.store.js';

export { keyHeader, orderFlow, placeAll, post } from '../../sample-app/load/order-flow.js';
export { spawnInstance, type ChildInstance } from '../../sample-app/load/instances.js';

/** An instance of the exchange in this process. */
export interface LocalInstance {
  readonly app: INestApplication;
  readonly base: string;
}

/** Accounts the specs trade as besides the default ones (each funded as a default account). */
export const TEST_ACCOUNTS = ['idem', 'cx-buyer', 'cx-seller', 'frozen-1', 'warm-1', 'late'];

/**
 * The exchange's default configuration (keys from `dev-secret`) plus `extra` accounts: given as
 * ids (10,000,000 cash and 100,000 units of every symbol, as the defaults) or in full.
 */
export function testExchangeConfig(extra: readonly (string | NonNullable<ExchangeConfigFile['accounts']>[number])[] = TEST_ACCOUNTS, raw: Omit<ExchangeConfigFile, 'accounts'> = {}): ExchangeConfig {
  const base = loadExchangeConfig({});
  const units = (n: bigint | string) => Object.fromEntries(base.symbols.map((s) => [s, n.toString()]));
  const accounts = [
    ...[...base.accounts.values()].map((a) => ({ id: a.id, cash: formatUnits(a.cashTicks), units: Object.fromEntries(Object.entries(a.units).map(([s, n]) => [s, n.toString()])) })),
    ...extra.map((a) => (typeof a === 'string' ? { id: a, cash: '10000000', units: units('100000') } : a)),
  ];
  return buildExchangeConfig({ ...raw, accounts }, 'dev-secret');
}

/**
 * Starts an instance of the exchange in this process, on a free port, with EchoMQ on the
 * testing module (`EchoMqTestingModule`, pointed at the given Valkey: it neither starts nor
 * stops it) and `testExchangeConfig()` unless `options.config` says otherwise.
 */
export async function startLocal(url: string, instance: string, options: Omit<AppOptions, 'url' | 'instance' | 'echoMq'> = {}): Promise<LocalInstance> {
  const app0 = AppModule.forRoot({
    url,
    instance,
    config: testExchangeConfig(),
    ...options,
    echoMq: (o) => EchoMqTestingModule.forRoot({ ...o, connection: { url } }),
  });
  const mod = await Test.createTestingModule({ imports: [app0] }).compile();
  const app = mod.createNestApplication({ logger: ['error'] });
  await app.listen(0, '127.0.0.1');
  const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
  return { app, base: `http://127.0.0.1:${port}` };
}

/** Every entry of a topic's log, in order. */
export async function logOf<T>(bus: BusService, topic: string): Promise<{ id: string; payload: T; at: number }[]> {
  const out: { id: string; payload: T; at: number }[] = [];
  for await (const e of bus.replay<T>(topic, { batch: 1000 })) out.push({ id: e.id, payload: e.payload, at: e.at.getTime() });
  return out;
}

/** The trades on the `trades` topic, each id once, by shard then trade number. */
export async function publishedTrades(bus: BusService): Promise<Trade[]> {
  const by = new Map<string, Trade>();
  for (const e of await logOf<Trade>(bus, TRADES_TOPIC)) if (!by.has(e.payload.id)) by.set(e.payload.id, e.payload);
  return [...by.values()].sort((a, b) => a.shard - b.shard || a.tradeSeq - b.tradeSeq);
}

/** The reference: every shard's command log replayed through the engine alone. */
export async function referenceRun(bus: BusService): Promise<{ trades: Trade[]; placed: Set<string>; commands: number; order: (id: string) => OrderState | undefined }> {
  const trades: Trade[] = [];
  const placed = new Set<string>();
  // The engine forgets ended orders: each order's final state is the last one an apply reported.
  const states = new Map<string, OrderState>();
  let commands = 0;
  for (let shard = 0; shard < SHARDS; shard++) {
    const engine = new MatchingEngine(shard);
    for (const e of await logOf<Command>(bus, commandTopic(shard))) {
      if (e.payload.kind === 'place') placed.add(e.payload.orderId);
      const out = engine.apply(e.payload, e.at);
      trades.push(...out.trades);
      for (const s of out.orders) states.set(s.orderId, s);
      commands++;
    }
  }
  return { trades, placed, commands, order: (id) => states.get(id) };
}

/** What settling some trades moves on an account: cash in ticks and units per symbol (zeros left out). */
export interface LedgerMoves {
  cashTicks: bigint;
  units: Record<string, number>;
}

/** Each account's cash (ticks) and units moved by settling `trades`. */
export function holdingsOf(trades: readonly Trade[]): Map<string, LedgerMoves> {
  const out = new Map<string, LedgerMoves>();
  const get = (a: string) => out.get(a) ?? (out.set(a, { cashTicks: 0n, units: {} }), out.get(a)!);
  for (const t of trades) {
    const b = get(t.buyAccount);
    const s = get(t.sellAccount);
    b.cashTicks -= BigInt(t.notionalTicks);
    s.cashTicks += BigInt(t.notionalTicks);
    b.units[t.symbol] = (b.units[t.symbol] ?? 0) + t.qty;
    s.units[t.symbol] = (s.units[t.symbol] ?? 0) - t.qty;
  }
  for (const h of out.values()) for (const [k, v] of Object.entries(h.units)) if (v === 0) delete h.units[k];
  return out;
}

/** What the ledger holds of `account` beyond its opening balances in `config` (as `holdingsOf` shows moves). */
export async function ledgerMoves(store: ExchangeStore, config: ExchangeConfig, account: string): Promise<LedgerMoves> {
  const l = await store.holdings(account);
  const opening = config.accounts.get(account);
  const units: Record<string, number> = {};
  for (const [sym, u] of Object.entries(l.units)) {
    const moved = u.held - (opening?.units[sym] ?? 0n);
    if (moved !== 0n) units[sym] = Number(moved);
  }
  return { cashTicks: l.cashTicks - (opening?.cashTicks ?? 0n), units };
}

/** GETs (or with `method`, sends) `path` as `account` (its key in `x-api-key`). */
export const fetchAs = (account: string | undefined, url: string, method = 'GET'): Promise<Response> => fetch(url, { method, headers: keyHeader(account) });

/** GETs JSON as `account`. */
export const getJsonAs = async <T>(account: string, url: string): Promise<T> => (await (await fetchAs(account, url)).json()) as T;

/** Polls `check` every 100 ms until it returns true; fails after `ms` with `what`. */
export async function until(check: () => Promise<boolean>, ms: number, what: () => string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms: ${what()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Waits until everything accepted has been worked off: no order, fill or settlement job left,
 * every shard's cursor at the end of its log, and every published trade settled or buried.
 */
export async function quiesce(queues: QueueService, bus: BusService, store: ExchangeStore, ms = 30_000): Promise<void> {
  let state = '';
  await until(
    async () => {
      const busy = await Promise.all([ORDERS_QUEUE, FILLS_QUEUE, SETTLEMENTS_QUEUE].map(async (q) => {
        const c = await queues.counts(q);
        return c.pending + c.active + c.scheduled;
      }));
      const behind: number[] = [];
      for (let s = 0; s < SHARDS; s++) {
        const len = (await logOf(bus, commandTopic(s))).length;
        if ((await store.cursor(s)) !== len - 1) behind.push(s);
      }
      const trades = (await publishedTrades(bus)).length;
      const c = await queues.counts(SETTLEMENTS_QUEUE);
      state = `busy ${busy.join('/')}, shards behind [${behind.join(',')}], trades ${trades}, settlements done ${c.done} dead ${c.dead}`;
      return busy.every((b) => b === 0) && behind.length === 0 && c.done + c.dead === trades;
    },
    ms,
    () => state,
  );
}
