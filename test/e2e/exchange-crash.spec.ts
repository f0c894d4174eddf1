/**
 * The outside verifier. `npm run sample:two` as a user runs it (the launcher, its own Valkey, two
 * instances as child processes); a load of 900 orders across six symbols; mid-load the instance
 * holding more shards is SIGKILLed, the survivor takes its shards over, and the launcher restarts
 * it on its port (requests it dropped are retried elsewhere with the same client order id).
 * After quiescence, read from outside (a bare EchoMQ module and the store's client on the
 * launcher's Valkey), every invariant holds:
 *
 * - every accepted order is on its shard's log, and its stored view equals a pure replay of the logs;
 * - the trades on `trades` are the replay's, each settled exactly once (ledger, settlement jobs,
 *   one latency sample each);
 * - cash and units are conserved (Σ over accounts = the opening totals, exact bigint), none
 *   negative, and each account's moves equal those computed from the trades;
 * - each account's reservations equal what its open orders (in the replay) still reserve;
 * - candles and exposure equal those recomputed from the trade log;
 * - the restarted instance serves the same orders, positions and trades as the survivor.
 */
import { isDeepStrictEqual } from 'node:util';
import { Test, type TestingModule } from '@nestjs/testing';
import { BusService, EchoMqModule, QueueService } from '../../src/index.js';
import { deriveAdminKey, loadExchangeConfig } from '../../sample-app/config/exchange.config.js';
import { SHARDS, settlementJobId } from '../../sample-app/engine/ids.js';
import type { OrderState } from '../../sample-app/engine/engine.types.js';
import { SETTLEMENTS_QUEUE } from '../../sample-app/exchange.names.js';
import { candlesOf } from '../../sample-app/market/candles.js';
import { InstancePool } from '../../sample-app/load/instance-pool.js';
import { CANDLE_INTERVALS, ExchangeStore, STORE_URL } from '../../sample-app/store/exchange.store.js';
import type { ExchangeStats } from '../../sample-app/web/stats.controller.js';
import { fetchAs, holdingsOf, ledgerMoves, orderFlow, placeAll, publishedTrades, quiesce, referenceRun, until } from './exchange.helpers.js';
import { launchTwo, type Launched } from './exchange-launcher.helpers.js';

const SYMBOLS = ['ACME', 'BOLT', 'CRUX', 'DUNE', 'EPIC', 'FLUX'];
const ADMIN = { 'x-api-key': deriveAdminKey('dev-secret') };
/** What an order still reserves: cash (ticks) for a buy limit, units for a sell; nothing once ended. */
const stillReserves = (o: OrderState): bigint =>
  o.status !== 'open' && o.status !== 'partially-filled' ? 0n : BigInt(o.qty - o.filledQty) * (o.side === 'buy' ? BigInt(o.priceTicks ?? '0') : 1n);

describe('sample exchange under sample:two: one instance SIGKILLed mid-load and restarted', () => {
  let launched: Launched | undefined;
  let outside: TestingModule | undefined;

  afterAll(async () => {
    await outside?.close();
    await launched?.stop();
  });

  it('keeps every invariant, and the restarted instance serves the same data', async () => {
    const l = (launched = await launchTwo());
    const stats = async (i: number): Promise<ExchangeStats> => (await (await fetch(`${l.bases[i]}/stats`, { headers: ADMIN })).json()) as ExchangeStats;
    outside = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { url: l.valkeyUrl } })],
      providers: [{ provide: STORE_URL, useValue: l.valkeyUrl }, ExchangeStore],
    }).compile();
    await outside.init();
    const bus = outside.get(BusService);
    const queues = outside.get(QueueService);
    const store = outside.get(ExchangeStore);
    const config = loadExchangeConfig();

    // The victim: the instance holding more shards once every shard has a holder.
    await until(async () => (await stats(0)).shards.every((s) => s.owner !== null), 20_000, () => 'the shards found no holders');
    const [s0, s1] = [await stats(0), await stats(1)];
    const heldBy = (s: ExchangeStats) => s.shards.filter((x) => x.owner === s.self.owner).length;
    const victim = heldBy(s1) > heldBy(s0) ? 1 : 0;
    const survivor = 1 - victim;
    const victimOwner = [s0, s1][victim].self.owner;

    const pool = new InstancePool(l.bases);
    const orders = orderFlow(7, 900, SYMBOLS, `crash-${Date.now().toString(36)}`);
    const placing = placeAll(() => pool.live(), orders, 12, undefined, 'dev-secret', pool);
    const sequenced = async (): Promise<number> => (await Promise.all(Array.from({ length: SHARDS }, (_, s) => store.cursor(s)))).reduce((n, c) => n + c + 1, 0);
    await until(async () => (await sequenced()) > 250, 30_000, () => 'no progress before the kill');

    const oldPid = l.pid(victim);
    process.kill(oldPid, 'SIGKILL');
    const killedAt = Date.now();
    // Every shard the victim held gets a live holder (the survivor, or the restarted victim).
    await until(async () => (await stats(survivor)).shards.every((s) => s.owner !== null && s.owner !== victimOwner), 20_000, () => 'shards stayed with the dead holder');
    const failoverMs = Date.now() - killedAt;
    await l.restarted(victim, oldPid);
    const restartMs = Date.now() - killedAt;
    // /stats shows the dead instance's market-data members going silent (their pending events, if
    // any, counted in redeliveriesPending until a live member re-delivers them).
    let redeliveries = 0;
    await until(
      async () => {
        const s = await stats(survivor);
        redeliveries = Math.max(redeliveries, s.redeliveriesPending);
        const dead = s.members.filter((m) => m.consumer.includes(`-${oldPid}-`));
        return dead.length === 2 && dead.every((m) => m.silent);
      },
      20_000,
      () => `the dead instance's group members were not shown silent`,
    );
    const ids = await placing;
    expect(ids.size).toBe(orders.length);
    // The kill cost requests, each accepted elsewhere or after the restart.
    const victimTally = pool.tally.get(l.bases[victim])!;
    expect(victimTally.unreachable + victimTally.unavailable).toBeGreaterThan(0);

    await quiesce(queues, bus, store, 90_000);

    // Every accepted order is on its shard's log; every view is the replay's final state.
    const ref = await referenceRun(bus);
    expect([...ids.values()].filter((id) => !ref.placed.has(id))).toEqual([]);
    const views = await Promise.all([...ids.values()].map((id) => store.view(id)));
    expect(views).toEqual([...ids.values()].map((id) => ref.order(id)));

    // The trades are the replay's, each settled exactly once.
    const published = await publishedTrades(bus);
    expect(published.length).toBeGreaterThan(100);
    expect(published).toEqual([...ref.trades].sort((x, y) => x.shard - y.shard || x.tradeSeq - y.tradeSeq));
    expect(await store.settledCount()).toBe(published.length);
    const jobs = await Promise.all(published.map((t) => queues.getJob(SETTLEMENTS_QUEUE, settlementJobId(t, 'settle'))));
    expect(jobs.filter((j) => j?.status !== 'done').map((j) => j?.id)).toEqual([]);
    for (const i of [0, 1]) {
      const s = await stats(i);
      expect([s.settled, s.latency.samples]).toEqual([published.length, published.length]);
    }

    // Cash and units: conserved, never negative, each account moved exactly by its trades,
    // and reserved = what its open orders still reserve.
    const moves = holdingsOf(published);
    const open = new Map<string, bigint>();
    for (const id of ids.values()) {
      const o = ref.order(id)!;
      const k = o.side === 'buy' ? `${o.account} cash` : `${o.account} ${o.symbol}`;
      open.set(k, (open.get(k) ?? 0n) + stillReserves(o));
    }
    // Not vacuous: some orders are still open and reserve something.
    expect([...open.values()].some((v) => v > 0n)).toBe(true);
    let [cash, cash0] = [0n, 0n];
    const units = new Map<string, bigint>();
    const units0 = new Map<string, bigint>();
    for (const a of config.accounts.values()) {
      const h = await store.holdings(a.id);
      cash += h.cashTicks;
      cash0 += a.cashTicks;
      expect([a.id, h.cashTicks >= 0n, h.reservedTicks >= 0n, h.cashTicks - h.reservedTicks >= 0n]).toEqual([a.id, true, true, true]);
      expect([a.id, h.reservedTicks]).toEqual([a.id, open.get(`${a.id} cash`) ?? 0n]);
      for (const [sym, u] of Object.entries(h.units)) {
        units.set(sym, (units.get(sym) ?? 0n) + u.held);
        expect([a.id, sym, u.held >= 0n, u.reserved >= 0n, u.held - u.reserved >= 0n]).toEqual([a.id, sym, true, true, true]);
        expect([a.id, sym, u.reserved]).toEqual([a.id, sym, open.get(`${a.id} ${sym}`) ?? 0n]);
      }
      for (const [sym, n] of Object.entries(a.units)) units0.set(sym, (units0.get(sym) ?? 0n) + n);
      expect([a.id, await ledgerMoves(store, config, a.id)]).toEqual([a.id, moves.get(a.id) ?? { cashTicks: 0n, units: {} }]);
    }
    expect(cash).toBe(cash0);
    for (const [sym, n] of units0) expect([sym, units.get(sym) ?? 0n]).toEqual([sym, n]);

    // Candles and exposure: equal to those recomputed from the trade log.
    let diff = '';
    await until(
      async () => {
        for (const s of SYMBOLS) {
          for (const iv of CANDLE_INTERVALS) {
            const [got, want] = [await store.candles(s, iv, 1000), candlesOf(published, s, iv)];
            diff = `${s} ${iv}: ${JSON.stringify(got)} vs ${JSON.stringify(want)}`;
            if (!isDeepStrictEqual(got, want)) return false;
          }
        }
        return true;
      },
      15_000,
      () => `candles differ from the trade log: ${diff}`,
    );
    for (const [account, h] of moves) {
      const e = await store.exposure(account);
      expect([account, e.units, e.netNotionalTicks]).toEqual([account, h.units, -h.cashTicks]);
    }

    // The restarted instance serves what the survivor serves: every order, every position, the trades.
    const both = async (path: string, account?: string): Promise<[unknown, unknown]> => {
      const get = async (i: number): Promise<unknown> => {
        const res = account === undefined ? await fetch(`${l.bases[i]}${path}`) : await fetchAs(account, `${l.bases[i]}${path}`);
        expect([path, res.status]).toEqual([path, 200]);
        return res.json();
      };
      return [await get(survivor), await get(victim)];
    };
    for (const [i, o] of orders.entries()) {
      const id = ids.get(o.clientOrderId)!;
      const [a, b] = await both(`/orders/${id}`, o.account);
      expect([i, b]).toEqual([i, a]);
    }
    const accounts = [...new Set(orders.map((o) => o.account))];
    const positionsAgree = async (): Promise<boolean> => {
      for (const acct of accounts) {
        const [a, b] = await both(`/accounts/${acct}/positions`, acct);
        const strip = (p: unknown) => ({ ...(p as Record<string, unknown>), readAt: undefined });
        if (!isDeepStrictEqual(strip(a), strip(b))) return false;
      }
      return true;
    };
    await until(positionsAgree, 5000, () => 'positions differ between the instances');
    const [ta, tb] = await both('/market/trades?count=100');
    expect(tb).toEqual(ta);
    expect(l.output()).not.toMatch(/Unhandled error event/);
    console.log(
      `crash verifier: ${orders.length} orders, ${published.length} trades, ${ref.commands} commands; instance-${victim + 1} killed: ` +
        `shards re-held in ${failoverMs} ms, instance back in ${restartMs} ms; ${victimTally.unreachable + victimTally.unavailable} requests failed on it, ` +
        `${victimTally.retriedElsewhere} orders accepted elsewhere; up to ${redeliveries} market-data events awaiting re-delivery`,
    );
  }, 240_000);
});
