/** Helpers of the sample exchange's end-to-end tests: instances, order flows, the reference run. */
import 'reflect-metadata';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { BusService, QueueService } from '../../src/index.js';
import { AppModule } from '../../sample-app/app.module.js';
import { MatchingEngine } from '../../sample-app/engine/matching-engine.js';
import type { Command, OrderState, Trade } from '../../sample-app/engine/engine.types.js';
import { SHARDS } from '../../sample-app/engine/ids.js';
import { commandTopic, FILLS_QUEUE, ORDERS_QUEUE, SETTLEMENTS_QUEUE, TRADES_TOPIC } from '../../sample-app/exchange.names.js';
import type { ExchangeStore } from '../../sample-app/store/exchange.store.js';

export { orderFlow, placeAll, post } from '../../sample-app/load/order-flow.js';
export { spawnInstance, type ChildInstance } from '../../sample-app/load/instances.js';

/** An instance of the exchange in this process. */
export interface LocalInstance {
  readonly app: INestApplication;
  readonly base: string;
}

/** Starts an instance of the exchange in this process, on a free port. */
export async function startLocal(url: string, instance: string): Promise<LocalInstance> {
  const mod = await Test.createTestingModule({ imports: [AppModule.forRoot({ url, instance })] }).compile();
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

/** Each account's cash (ticks) and units after settling `trades`. */
export function holdingsOf(trades: readonly Trade[]): Map<string, { cashTicks: number; units: Record<string, number> }> {
  const out = new Map<string, { cashTicks: number; units: Record<string, number> }>();
  const get = (a: string) => out.get(a) ?? (out.set(a, { cashTicks: 0, units: {} }), out.get(a)!);
  for (const t of trades) {
    const b = get(t.buyAccount);
    const s = get(t.sellAccount);
    b.cashTicks -= Number(t.notionalTicks);
    s.cashTicks += Number(t.notionalTicks);
    b.units[t.symbol] = (b.units[t.symbol] ?? 0) + t.qty;
    s.units[t.symbol] = (s.units[t.symbol] ?? 0) - t.qty;
  }
  for (const h of out.values()) for (const [k, v] of Object.entries(h.units)) if (v === 0) delete h.units[k];
  return out;
}

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
