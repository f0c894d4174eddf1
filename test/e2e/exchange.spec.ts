/**
 * The sample exchange on two instances in this process, one Valkey of its own: order entry,
 * matching compared with the engine run alone, settlement exactly once, candles and risk from
 * the Bus, coherent cached positions, the failure policy of a leg, the page.
 */
import { isDeepStrictEqual } from 'node:util';
import { BusService, QueueService } from '../../src/index.js';
import { keySlot } from '../../src/core/slot.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import type { PositionsView } from '../../sample-app/accounts/positions.service.js';
import type { Trade } from '../../sample-app/engine/engine.types.js';
import { SHARDS, settlementJobId, shardOf } from '../../sample-app/engine/ids.js';
import { commandTopic, FILLS_QUEUE, ORDERS_QUEUE, SETTLEMENTS_QUEUE, TRADES_TOPIC } from '../../sample-app/exchange.names.js';
import { candlesOf } from '../../sample-app/market/candles.js';
import type { OrderView } from '../../sample-app/orders/order-entry.service.js';
import { BookHolder } from '../../sample-app/matching/book-holder.js';
import { CANDLE_INTERVALS, ExchangeStore } from '../../sample-app/store/exchange.store.js';
import { fetchAs, holdingsOf, ledgerMoves, logOf, orderFlow, placeAll, post, publishedTrades, quiesce, referenceRun, startLocal, testExchangeConfig, until, type LocalInstance } from './exchange.helpers.js';

const SYMBOLS = ['ACME', 'BOLT', 'CRUX', 'DUNE', 'EPIC', 'FLUX'];
/** The documented bound (sample-app/README.md): cache poll period (1 s) + one read, with margin. */
const POSITIONS_BOUND_MS = 1500;

describe('sample exchange: two instances on one Valkey', () => {
  let valkey: EmbeddedValkey;
  let a: LocalInstance;
  let b: LocalInstance;
  let bus: BusService;
  let queues: QueueService;
  let store: ExchangeStore;
  /** GETs JSON as `account` (its API key sent). */
  const getJson = async <T>(url: string, account = 'idem'): Promise<T> => (await (await fetchAs(account, url)).json()) as T;
  const config = testExchangeConfig();

  beforeAll(async () => {
    valkey = await startEmbeddedValkey();
    a = await startLocal(valkey.url, 'A');
    b = await startLocal(valkey.url, 'B');
    bus = a.app.get(BusService);
    queues = a.app.get(QueueService);
    store = a.app.get(ExchangeStore);
  });
  let aClosed = false;
  let bClosed = false;
  afterAll(async () => {
    if (!aClosed) await a?.app.close();
    if (!bClosed) await b?.app.close();
    await valkey?.stop();
  });

  it('refuses bad orders with 400 listing every problem, and places once per client order id', async () => {
    const bad = await post(b.base, '/orders', { account: 'no spaces', side: 'hold', symbol: 'acme', qty: 0, type: 'market', price: 1, extra: true }, 'idem');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { problems: string[] }).problems).toEqual([
      'unknown field "extra"',
      'account must be 1-32 letters, digits, "_", "." or "-", starting with a letter or digit; got "no spaces"',
      'symbol must be 1-12 uppercase letters, digits or ".", starting with a letter; got "acme"',
      'side must be "buy" or "sell"; got "hold"',
      'qty must be positive; got 0',
      'price must be absent for a market order',
    ]);
    // No account: the key's (idem) is used.
    expect(((await (await post(b.base, '/orders', { side: 'buy' }, 'idem')).json()) as { problems: string[] }).problems).toEqual([
      'symbol is required',
      'qty is required',
      'price is required for a limit order',
    ]);
    expect((await post(b.base, '/orders', [1], 'idem')).status).toBe(400);
    const order = { account: 'idem', clientOrderId: 'retry-1', symbol: 'ZZZ', side: 'sell', qty: 3, price: 500 };
    const first = await post(a.base, '/orders', order);
    const again = await post(b.base, '/orders', order);
    expect([first.status, again.status]).toEqual([202, 200]);
    const id = ((await first.json()) as { orderId: string }).orderId;
    expect(((await again.json()) as { orderId: string }).orderId).toBe(id);
    expect((await post(b.base, '/orders', { ...order, qty: 4 })).status).toBe(409);
    await until(async () => (await getJson<OrderView>(`${b.base}/orders/${id}`)).status === 'open', 5000, () => 'order not on the book');
    expect((await fetchAs('idem', `${a.base}/orders/jobzzzzzzzzzzz`)).status).toBe(400); // a malformed branded id
    expect((await fetchAs('idem', `${a.base}/orders/not-an-id`)).status).toBe(404); // a business id no order holds
    expect((await fetchAs('idem', `${a.base}/orders/job00000000000`)).status).toBe(404);
    // Cancel: 202, then the book shows it cancelled; a second cancel is a conflict.
    expect((await fetchAs('idem', `${a.base}/orders/${id}`, 'DELETE')).status).toBe(202);
    await until(async () => (await getJson<OrderView>(`${b.base}/orders/${id}`)).status === 'cancelled', 5000, () => 'not cancelled');
    expect((await fetchAs('idem', `${b.base}/orders/${id}`, 'DELETE')).status).toBe(409);
    // A malformed command enqueued behind the API's back is buried, never put on a log.
    const logged = (await logOf(bus, commandTopic(shardOf('ZZZ')))).length;
    const junk = await queues.enqueue(ORDERS_QUEUE, { kind: 'place', orderId: 'x', symbol: 'ZZZ', account: 'a', clientOrderId: 'c', side: 'buy', type: 'limit', qty: 'lots', priceTicks: 1 });
    await until(async () => (await queues.getJob(ORDERS_QUEUE, junk))?.status === 'dead', 5000, () => 'junk not buried');
    expect((await logOf(bus, commandTopic(shardOf('ZZZ')))).length).toBe(logged);
  });

  it('matches orders placed on both instances exactly as the engine alone would, and settles each trade once', async () => {
    expect(new Set(SYMBOLS.map(shardOf)).size).toBeGreaterThan(2);
    // The settlement flow spans two slots: its children's queue and its parents' queue.
    expect(keySlot(`emq:{${FILLS_QUEUE}}:meta`)).not.toBe(keySlot(`emq:{${SETTLEMENTS_QUEUE}}:meta`));
    const orders = orderFlow(1, 600, SYMBOLS, 'm');
    const ids = await placeAll(() => [a.base, b.base], orders);
    await quiesce(queues, bus, store);

    const ref = await referenceRun(bus);
    for (const id of ids.values()) expect(ref.placed.has(id)).toBe(true);
    const published = await publishedTrades(bus);
    expect(published.length).toBeGreaterThan(100);
    expect(published).toEqual(ref.trades.sort((x, y) => x.shard - y.shard || x.tradeSeq - y.tradeSeq));
    expect(new Set(published.map((t) => t.shard)).size).toBeGreaterThan(2);

    // Settled exactly once: the ledger moved each trade once, every settlement job is done once.
    expect(await store.settledCount()).toBe(published.length);
    const jobs = await Promise.all(published.map((t) => queues.getJob<unknown, { moved: boolean }>(SETTLEMENTS_QUEUE, settlementJobId(t, 'settle'))));
    expect(jobs.map((j) => [j?.status, j?.result?.moved])).toEqual(published.map(() => ['done', true]));
    for (const [account, h] of holdingsOf(published)) expect(await ledgerMoves(store, config, account)).toEqual(h);
    // Every order's view (as any instance serves it) is the engine's final state of it.
    const views = await Promise.all([...ids.values()].map((id) => store.view(id)));
    expect(views).toEqual([...ids.values()].map((id) => ref.order(id)));
  });

  it('builds 1 s and 1 min candles and the risk view equal to those recomputed from the trade log, and rebuilds them by replay', async () => {
    const trades = await publishedTrades(bus);
    let diff = '';
    const candlesMatch = async (): Promise<boolean> => {
      for (const s of SYMBOLS) {
        for (const iv of CANDLE_INTERVALS) {
          const [got, want] = [await store.candles(s, iv, 1000), candlesOf(trades, s, iv)];
          diff = `${s} ${iv}: ${JSON.stringify(got)} vs ${JSON.stringify(want)}`;
          if (!isDeepStrictEqual(got, want)) return false;
        }
      }
      return true;
    };
    await until(candlesMatch, 10_000, () => `candles differ from the trade log: ${diff}`);
    for (const [account, h] of holdingsOf(trades)) {
      const e = await store.exposure(account);
      expect(e.units).toEqual(h.units);
      expect(e.netNotionalTicks).toBe(-h.cashTicks);
    }
    const res = await fetch(`${b.base}/market/candles/${SYMBOLS[0]}?interval=1m`);
    expect(((await res.json()) as { volume: number }[]).reduce((n, c) => n + c.volume, 0)).toBe(
      trades.filter((t) => t.symbol === SYMBOLS[0]).reduce((n, t) => n + t.qty, 0),
    );
    // Lose a symbol's candles, then replay the trade log from an instant.
    for (const s of SYMBOLS) await store.dropCandles(s);
    expect(await store.candles(SYMBOLS[0], 1000)).toEqual([]);
    const from = new Date(Math.min(...trades.map((t) => t.at)));
    const rebuilt = await post(a.base, `/market/rebuild?from=${from.toISOString()}`, {});
    expect(((await rebuilt.json()) as { replayed: number }).replayed).toBeGreaterThanOrEqual(trades.length);
    expect(await candlesMatch()).toBe(true);
  });

  it('serves cached positions and converges on both instances within the bound after a settlement', async () => {
    const positions = (inst: LocalInstance, acct: string) => getJson<PositionsView>(`${inst.base}/accounts/${acct}/positions`, acct);
    const [pa, pb] = [await positions(a, 'cx-buyer'), await positions(b, 'cx-buyer')];
    expect(pa).toMatchObject({ cash: '10000000.0000', reserved: '0.0000', available: '10000000.0000' });
    expect(pa.units.COH).toEqual({ held: 100_000, reserved: 0 });
    // Cached: a second read is the same value, read from the ledger at the same instant.
    expect((await positions(a, 'cx-buyer')).readAt).toBe(pa.readAt);
    expect((await positions(b, 'cx-buyer')).readAt).toBe(pb.readAt);
    await positions(a, 'cx-seller');
    await post(a.base, '/orders', { account: 'cx-seller', symbol: 'COH', side: 'sell', qty: 7, price: 10 });
    const buy = (await (await post(b.base, '/orders', { account: 'cx-buyer', symbol: 'COH', side: 'buy', qty: 7, price: 10 })).json()) as { orderId: string };
    let settledAt = 0;
    await until(
      async () => {
        const trade = (await publishedTrades(bus)).find((t) => t.buyOrderId === buy.orderId);
        const job = trade && (await queues.getJob(SETTLEMENTS_QUEUE, settlementJobId(trade, 'settle')));
        settledAt = job?.status === 'done' ? Date.now() : 0;
        return settledAt > 0;
      },
      10_000,
      () => 'the trade did not settle',
    );
    const expected = { cash: '9999930.0000', units: { COH: 100_007 } };
    await until(
      async () => (await Promise.all([positions(a, 'cx-buyer'), positions(b, 'cx-buyer')])).every((p) => p.cash === expected.cash && p.units.COH.held === expected.units.COH),
      POSITIONS_BOUND_MS,
      () => 'cached positions did not converge within the bound',
    );
    expect(Date.now() - settledAt).toBeLessThanOrEqual(POSITIONS_BOUND_MS);
    expect(await positions(b, 'cx-seller')).toMatchObject({ cash: '10000070.0000', reserved: '0.0000', units: { COH: { held: 99_993, reserved: 0 } } });
  });

  it('buries a settlement whose leg fails and moves nothing (the documented policy)', async () => {
    await post(a.base, '/orders', { account: 'frozen-1', symbol: 'FRZ', side: 'sell', qty: 2, price: 5 });
    const buy = (await (await post(b.base, '/orders', { account: 'warm-1', symbol: 'FRZ', side: 'buy', qty: 2, price: 5 })).json()) as { orderId: string };
    let status: string | undefined;
    await until(
      async () => {
        const trade = (await publishedTrades(bus)).find((t) => t.buyOrderId === buy.orderId);
        status = trade && (await queues.getJob(SETTLEMENTS_QUEUE, settlementJobId(trade, 'settle')))?.status;
        return status === 'dead';
      },
      10_000,
      () => `settlement is ${status}`,
    );
    expect(await ledgerMoves(store, config, 'warm-1')).toEqual({ cashTicks: 0n, units: {} });
    expect(await ledgerMoves(store, config, 'frozen-1')).toEqual({ cashTicks: 0n, units: {} });
  });

  it('renders the page with the books, the recent trades and candles', async () => {
    const newest = (await logOf<Trade>(bus, TRADES_TOPIC)).reverse().slice(0, 25);
    const res = await fetch(`${b.base}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    const html = await res.text();
    const shown = [...html.matchAll(/<td>(T\d+\.\d+)<\/td>/g)].map((m) => m[1]);
    expect(shown.length).toBe(25);
    expect(new Set(shown)).toEqual(new Set(newest.map((e) => e.payload.id)));
    for (const s of SYMBOLS) expect(html).toContain(`<h3>${s}</h3>`);
    expect(html).toContain('· 1 s</h3>');
    const holders = [...(await fetch(`${a.base}/`).then((r) => r.text())).matchAll(/holds shards \[([\d, ]*)\]/g), ...html.matchAll(/holds shards \[([\d, ]*)\]/g)];
    expect(holders.flatMap((m) => (m[1] ? m[1].split(', ').map(Number) : [])).sort()).toEqual(Array.from({ length: SHARDS }, (_, i) => i));
  });

  it('hands the shards to the other instance at once when an instance shuts down cleanly', async () => {
    const held = async (inst: LocalInstance): Promise<number> => {
      const m = /holds shards \[([\d, ]*)\]/.exec(await (await fetch(`${inst.base}/`)).text());
      return m?.[1] ? m[1].split(', ').length : 0;
    };
    const [onA, onB] = [await held(a), await held(b)];
    expect(onA + onB).toBe(SHARDS);
    const [leaving, staying] = onA > 0 ? [a, b] : [b, a];
    const t0 = Date.now();
    await leaving.app.close();
    if (leaving === a) aClosed = true;
    else bClosed = true;
    await until(async () => (await held(staying)) === SHARDS, 5000, () => 'the shards were not handed over');
    expect(Date.now() - t0).toBeLessThan(4000);
    // Resigned, not expired: every shard's lease is the staying instance's, well before a 2 s lease could lapse.
    expect((await staying.app.get(BookHolder).holders()).map((h) => h.mine)).toEqual(Array.from({ length: SHARDS }, () => true));
    const res = await post(staying.base, '/orders', { account: 'late', symbol: SYMBOLS[0], side: 'buy', qty: 1, price: 1 });
    const { orderId } = (await res.json()) as { orderId: string };
    await until(async () => (await getJson<OrderView>(`${staying.base}/orders/${orderId}`, 'late')).status === 'open', 5000, () => 'the new holder does not match');
  });
});
