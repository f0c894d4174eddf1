/** Helpers of the sample exchange's end-to-end tests: instances, order flows, the reference run. */
import 'reflect-metadata';
import { spawn, type ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { BusService, QueueService } from '../../src/index.js';
import { AppModule } from '../../sample-app/app.module.js';
import { MatchingEngine } from '../../sample-app/engine/matching-engine.js';
import type { Command, OrderState, Trade } from '../../sample-app/engine/engine.types.js';
import { SHARDS } from '../../sample-app/engine/ids.js';
import { commandTopic, FILLS_QUEUE, ORDERS_QUEUE, SETTLEMENTS_QUEUE, TRADES_TOPIC } from '../../sample-app/exchange.names.js';
import type { OrderInput } from '../../sample-app/orders/order.dto.js';
import type { ExchangeStore } from '../../sample-app/store/exchange.store.js';

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

/** An instance of the exchange in a child process (`dist/sample-app/main.js`), to SIGKILL. */
export interface ChildInstance {
  readonly proc: ChildProcess;
  readonly base: string;
  /** SIGKILLs it (by pid) and waits for it to exit. */
  kill(): Promise<void>;
}

/** Starts `node dist/sample-app/main.js` on `url` and a free port; resolves once it listens. */
export function spawnChild(url: string, instance: string): Promise<ChildInstance> {
  const entry = join(process.cwd(), 'dist', 'sample-app', 'main.js');
  const proc = spawn(process.execPath, [entry], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ECHOMQ_URL: url, PORT: '0', INSTANCE: instance, NO_COLOR: '1' } });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  const kill = async (): Promise<void> => {
    if (proc.exitCode === null && proc.signalCode === null && proc.pid !== undefined) process.kill(proc.pid, 'SIGKILL');
    await exited;
  };
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => void kill().then(() => reject(new Error(`child did not start: ${out}`))), 20_000);
    const onData = (chunk: Buffer): void => {
      out += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, base: m[1].replace('localhost', '127.0.0.1'), kill });
      }
    };
    proc.stdout?.on('data', onData);
    proc.stderr?.on('data', (c: Buffer) => (out += c.toString()));
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`child exited: ${out}`));
    });
  });
}

/** A deterministic pseudo-random source (mulberry32). */
export function rng(seed: number): (k: number) => number {
  let s = seed | 0;
  return (k) => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t ^= t + Math.imul(t ^ (t >>> 7), 61 | t);
    return ((t ^ (t >>> 14)) >>> 0) % k;
  };
}

/** `n` orders over `symbols`: limits around 100 (±2.5, 0.5 apart), 10 % market, 10 accounts. */
export function orderFlow(seed: number, n: number, symbols: readonly string[], prefix: string): (OrderInput & { clientOrderId: string })[] {
  const r = rng(seed);
  return Array.from({ length: n }, (_, i) => {
    const market = r(10) === 0;
    return {
      account: `acc${r(10)}`,
      clientOrderId: `${prefix}-${i}`,
      symbol: symbols[r(symbols.length)],
      side: r(2) === 0 ? 'buy' : 'sell',
      type: market ? 'market' : 'limit',
      qty: 1 + r(10),
      ...(market ? {} : { price: 97.5 + r(11) / 2 }),
    };
  });
}

/** POSTs a JSON body. */
export const post = (base: string, path: string, body: unknown): Promise<Response> =>
  fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/**
 * Places `orders`, `parallel` at a time, order i on `bases()[i % n]`; a request that fails
 * (instance gone) is retried on the next base with the same client order id. Resolves to the
 * order ids by client order id.
 */
export async function placeAll(bases: () => readonly string[], orders: readonly (OrderInput & { clientOrderId: string })[], parallel = 16): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < orders.length; i = next++) {
      for (let attempt = 0; ; attempt++) {
        const bs = bases();
        try {
          const res = await post(bs[(i + attempt) % bs.length], '/orders', orders[i]);
          if (res.status !== 202 && res.status !== 200) throw new Error(`POST /orders: ${res.status} ${await res.text()}`);
          ids.set(orders[i].clientOrderId, ((await res.json()) as { orderId: string }).orderId);
          break;
        } catch (err) {
          if (attempt >= 20) throw err;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return ids;
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
  const engines: MatchingEngine[] = [];
  let commands = 0;
  for (let shard = 0; shard < SHARDS; shard++) {
    const engine = new MatchingEngine(shard);
    engines.push(engine);
    for (const e of await logOf<Command>(bus, commandTopic(shard))) {
      if (e.payload.kind === 'place') placed.add(e.payload.orderId);
      trades.push(...engine.apply(e.payload, e.at).trades);
      commands++;
    }
  }
  return { trades, placed, commands, order: (id) => engines.map((e) => e.order(id)).find((o) => o !== undefined) };
}

/** Each account's cash (ticks) and units after settling `trades`. */
export function holdingsOf(trades: readonly Trade[]): Map<string, { cashTicks: number; units: Record<string, number> }> {
  const out = new Map<string, { cashTicks: number; units: Record<string, number> }>();
  const get = (a: string) => out.get(a) ?? (out.set(a, { cashTicks: 0, units: {} }), out.get(a)!);
  for (const t of trades) {
    const b = get(t.buyAccount);
    const s = get(t.sellAccount);
    b.cashTicks -= t.qty * t.priceTicks;
    s.cashTicks += t.qty * t.priceTicks;
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
