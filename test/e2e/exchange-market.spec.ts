/**
 * The exchange's market data on two instances in this process, one Valkey of its own: candles and
 * risk exact for notionals past 2^53 ticks, minute candles sealed by the stored `seal-1m` schedule
 * (run now, without waiting a minute; idempotent per symbol and minute), and the books page served
 * from the coherent cache and dropped on every instance by the `books.changed` Bus event.
 */
import { randomBytes } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { BusService, EchoMqModule, QueueService } from '../../src/index.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { buildExchangeConfig, EXCHANGE_CONFIG } from '../../sample-app/config/exchange.config.js';
import type { Depth, Trade } from '../../sample-app/engine/engine.types.js';
import { shardOf } from '../../sample-app/engine/ids.js';
import { formatUnits } from '../../sample-app/engine/money.js';
import { BOOKS_CHANGED_TOPIC, CANDLES_CLOSED_TOPIC, CANDLES_QUEUE, TRADES_TOPIC } from '../../sample-app/exchange.names.js';
import { CandleSealStore } from '../../sample-app/market/candle-seal.store.js';
import { CandleSealer, SEAL_CRON, SEAL_LAG_MS, SEAL_SCHEDULE } from '../../sample-app/market/candle-sealer.processor.js';
import { candlesOf } from '../../sample-app/market/candles.js';
import type { DepthChanged, SealedCandle } from '../../sample-app/market/market.events.js';
import { ExchangeStore, STORE_URL } from '../../sample-app/store/exchange.store.js';
import { logOf, post, publishedTrades, startLocal, until, type LocalInstance } from './exchange.helpers.js';

const MINUTE = 60_000;
/** The bound the README states for a depth change to reach every instance's books page (the TTL is 60 s). */
const BOOKS_BOUND_MS = 2000;
const tag = (): string => randomBytes(3).toString('hex');

/** Polls `check` every 5 ms until it holds; resolves to the ms it took, fails after `ms`. */
async function fresh(check: () => Promise<boolean>, ms: number, what: string): Promise<number> {
  const t0 = Date.now();
  while (!(await check())) {
    if (Date.now() - t0 > ms) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return Date.now() - t0;
}

describe('sample exchange: market data, the seal schedule, the books cache', () => {
  let valkey: EmbeddedValkey;
  let a: LocalInstance;
  let b: LocalInstance;
  let bus: BusService;
  let store: ExchangeStore;
  let sealerOnly: INestApplication | undefined;
  let closed = false;

  beforeAll(async () => {
    valkey = await startEmbeddedValkey();
    a = await startLocal(valkey.url, 'A');
    b = await startLocal(valkey.url, 'B');
    bus = a.app.get(BusService);
    store = a.app.get(ExchangeStore);
  });
  afterAll(async () => {
    await sealerOnly?.close();
    if (!closed) await a?.app.close();
    if (!closed) await b?.app.close();
    await valkey?.stop();
  });

  it('keeps candles and risk exact for 11 trades of 999,999 × 99,999.9999 (−10999988989000011 ticks)', async () => {
    const symbol = 'EPIC';
    for (let i = 0; i < 11; i++) {
      const sell = await post(b.base, '/orders', { account: 'whale-b', symbol, side: 'sell', qty: 999_999, price: '99999.9999' });
      expect(sell.status).toBe(202);
      const buy = await post(a.base, '/orders', { account: 'whale-a', symbol, side: 'buy', qty: 999_999, price: '99999.9999' });
      expect(buy.status).toBe(202);
    }
    const total = 10_999_988_989_000_011n;
    expect(total).toBe(999_999n * 999_999_999n * 11n);
    expect(total > BigInt(Number.MAX_SAFE_INTEGER)).toBe(true);
    let trades: Trade[] = [];
    await until(
      async () => {
        trades = (await publishedTrades(bus)).filter((t) => t.symbol === symbol);
        const e = await store.exposure('whale-a');
        return trades.length === 11 && e.grossNotionalTicks === total;
      },
      15_000,
      () => `${trades.length} trades of ${symbol}, risk not folded`,
    );
    // Every trade carries its notional exactly, as a decimal string of ticks.
    expect(trades.map((t) => [t.priceTicks, t.qty, t.notionalTicks])).toEqual(trades.map(() => ['999999999', 999_999, '999998999000001']));
    // Risk: exact bigints, the seller's net the exact negative.
    expect(await store.exposure('whale-a')).toEqual({ units: { [symbol]: 10_999_989 }, netNotionalTicks: total, grossNotionalTicks: total });
    expect(await store.exposure('whale-b')).toEqual({ units: { [symbol]: -10_999_989 }, netNotionalTicks: -total, grossNotionalTicks: total });
    // Candles: equal to the bigint recomputation, and the API shows the exact units.
    await until(
      async () => JSON.stringify(await store.candles(symbol, MINUTE, 10)) === JSON.stringify(candlesOf(trades, symbol, MINUTE)),
      10_000,
      () => 'the 1 min candles differ from the recomputation',
    );
    const api = (await (await fetch(`${a.base}/market/candles/${symbol}?interval=1m`)).json()) as { notional: string; volume: number; high: string }[];
    const sum = api.reduce((n, c) => n + BigInt(c.notional.replace('.', '')), 0n);
    expect(formatUnits(sum)).toBe('1099998898900.0011');
    expect(api.reduce((n, c) => n + c.volume, 0)).toBe(10_999_989);
    expect(api.every((c) => c.high === '99999.9999')).toBe(true);
    const tr = (await (await fetch(`${b.base}/market/trades?count=11`)).json()) as { symbol: string; price: string; notional: string }[];
    expect(tr.filter((t) => t.symbol === symbol).map((t) => [t.price, t.notional])).toEqual(Array.from({ length: 11 }, () => ['99999.9999', '99999899900.0001']));
  });

  it('seals closed minutes by the stored schedule: once per symbol and minute, announced once on candles.closed, shown on the page', async () => {
    const queues = a.app.get(QueueService);
    const seals = a.app.get(CandleSealStore);
    // The schedule is stored (declared by @Processor on both instances: one schedule) and ticks every minute at :15.
    const [info] = (await queues.schedules(CANDLES_QUEUE)).filter((s) => s.name === SEAL_SCHEDULE);
    expect(info).toMatchObject({ name: SEAL_SCHEDULE, cron: SEAL_CRON, missed: 'once' });
    expect(info.next!.getTime() - Date.now()).toBeLessThanOrEqual(61_000);
    expect(info.next!.getUTCSeconds()).toBe(15);

    // Trades of a past minute (published as a holder would; the market-data groups fold them).
    const symbol = 'FLUX';
    const minute = Math.floor(Date.now() / MINUTE) * MINUTE - 3 * MINUTE;
    const run = tag();
    const trade = (n: number, price: bigint, qty: number): Trade => ({
      id: `X${run}.${n}`,
      shard: shardOf(symbol),
      tradeSeq: n,
      symbol,
      priceTicks: price.toString(),
      qty,
      notionalTicks: (price * BigInt(qty)).toString(),
      buyOrderId: `b${run}${n}`,
      sellOrderId: `s${run}${n}`,
      buyAccount: `mkt-${run}-buyer`,
      sellAccount: `mkt-${run}-seller`,
      takerSide: 'buy',
      at: minute + 1000 * n,
      inputSeq: n,
    });
    const trades = [trade(1, 1_000_000n, 5), trade(2, 999_999_999n, 999_999), trade(3, 1_234_567n, 7)];
    // And one in the minute before, which a sealer that died sealed 60 s ago without announcing it.
    const orphan = { ...trade(9, 3_000_000n, 2), at: minute - MINUTE + 5000 };
    await bus.publishMany<Trade>(TRADES_TOPIC, [...trades, orphan]);
    const live = async (start = minute) => (await store.candles(symbol, MINUTE, 100)).find((c) => c.start === start);
    await until(async () => (await live())?.trades === 3 && (await live(minute - MINUTE))?.trades === 1, 10_000, () => 'trades not folded');
    const want: SealedCandle = { ...candlesOf(trades, symbol, MINUTE)[0], symbol, interval: '1m', sealedAt: 0 };
    const orphaned: SealedCandle = { ...candlesOf([orphan], symbol, MINUTE)[0], symbol, interval: '1m', sealedAt: Date.now() - MINUTE };
    expect((await seals.seal(orphaned)).created).toBe(true);

    // Run the schedule now on both instances at once (as a tick racing a run-now would).
    const jobs = await Promise.all([queues.runScheduleNow(CANDLES_QUEUE, SEAL_SCHEDULE), b.app.get(QueueService).runScheduleNow(CANDLES_QUEUE, SEAL_SCHEDULE)]);
    await until(async () => (await Promise.all(jobs.map((id) => queues.getJob(CANDLES_QUEUE, id)))).every((j) => j?.status === 'done'), 10_000, () => 'seal jobs not done');
    const sealedOf = async () => (await seals.sealed(symbol, 100)).filter((c) => c.start === minute);
    const closedOf = async () => (await logOf<SealedCandle>(bus, CANDLES_CLOSED_TOPIC)).filter((e) => e.payload.symbol === symbol && e.payload.start === minute);
    const [record] = await sealedOf();
    expect(record).toEqual({ ...want, sealedAt: record.sealedAt });
    expect(record.notionalTicks).toBe((1_000_000n * 5n + 999_999_999n * 999_999n + 1_234_567n * 7n).toString());
    expect((await closedOf()).map((e) => e.payload)).toEqual([record]);
    // The orphaned record is announced once, as it was stored (not sealed again).
    const orphanEvents = (await logOf<SealedCandle>(bus, CANDLES_CLOSED_TOPIC)).filter((e) => e.payload.symbol === symbol && e.payload.start === minute - MINUTE);
    expect(orphanEvents.map((e) => e.payload)).toEqual([orphaned]);

    // A late trade changes the live candle, not the sealed record; sealing again publishes nothing.
    await bus.publish<Trade>(TRADES_TOPIC, trade(4, 2_000_000n, 1));
    await until(async () => (await live())?.trades === 4, 10_000, () => 'late trade not folded');
    const again = await queues.runScheduleNow(CANDLES_QUEUE, SEAL_SCHEDULE);
    await until(async () => (await queues.getJob(CANDLES_QUEUE, again))?.status === 'done', 10_000, () => 'seal job not done');
    expect(await sealedOf()).toEqual([record]);
    expect((await closedOf()).length).toBe(1);
    expect((await logOf<SealedCandle>(bus, CANDLES_CLOSED_TOPIC)).filter((e) => e.payload.symbol === symbol).length).toBe(2);

    // The API and the page show it, exactly.
    const api = (await (await fetch(`${b.base}/market/candles/${symbol}/sealed`)).json()) as { start: string; high: string; notional: string; trades: number }[];
    expect(api.find((c) => c.start === new Date(minute).toISOString())).toMatchObject({ high: '99999.9999', notional: formatUnits(BigInt(record.notionalTicks)), trades: 3 });
    const html = await (await fetch(`${b.base}/`)).text();
    expect(html).toContain(`<td>${symbol}</td><td>${new Date(minute).toISOString().slice(11, 16)}</td><td>100.0000</td><td>99999.9999</td>`);
    // Unlisted and malformed symbols.
    expect((await fetch(`${a.base}/market/candles/NOPE${run.toUpperCase()}/sealed`)).status).toBe(404);
    const bad = await fetch(`${a.base}/market/candles/nope/sealed?count=0`);
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { problems: string[] }).problems).toHaveLength(2);
  });

  it('serves GET /market/books from the cache until a books.changed event drops it on every instance', async () => {
    type Book = { symbol: string; bids: { price: string; qty: number }[] };
    const get = async (inst: LocalInstance): Promise<{ cache: string | null; books: Book[] }> => {
      const res = await fetch(`${inst.base}/market/books`);
      return { cache: res.headers.get('x-cache'), books: (await res.json()) as Book[] };
    };
    const bidOf = (books: Book[], symbol: string): string | undefined => books.find((x) => x.symbol === symbol)?.bids[0]?.price;
    // Fill both instances' caches; a second read is a hit.
    await Promise.all([get(a), get(b)]);
    const [ha, hb] = await Promise.all([get(a), get(b)]);
    expect([ha.cache, hb.cache]).toEqual(['HIT', 'HIT']);

    // 1. Depth stored without an event: the cache keeps serving the old page (a 60 s TTL would, for a minute).
    const symbol = 'DUNE';
    const fake: Depth = { symbol, bids: [{ priceTicks: '123450000', qty: 1, orders: 1 }], asks: [] };
    await store.setDepth([fake]);
    for (let i = 0; i < 5; i++) {
      const [ra, rb] = await Promise.all([get(a), get(b)]);
      expect([ra.cache, rb.cache, bidOf(ra.books, symbol), bidOf(rb.books, symbol)]).toEqual(['HIT', 'HIT', undefined, undefined]);
      await new Promise((r) => setTimeout(r, 100));
    }
    // …then the event, as a holder publishes it: both instances show the new depth within the bound, and never the old one again.
    await bus.publish<DepthChanged>(BOOKS_CHANGED_TOPIC, { shard: shardOf(symbol), symbols: [symbol] });
    const both = async (price: string): Promise<boolean> => (await Promise.all([get(a), get(b)])).every((r) => bidOf(r.books, symbol) === price);
    const manualMs = await fresh(() => both('12345.0000'), BOOKS_BOUND_MS, 'the event did not drop the cached books');
    for (let i = 0; i < 5; i++) {
      const [ra, rb] = await Promise.all([get(a), get(b)]);
      expect([ra.cache, rb.cache, bidOf(ra.books, symbol), bidOf(rb.books, symbol)]).toEqual(['HIT', 'HIT', '12345.0000', '12345.0000']);
    }

    // 2. The real path: an order rests on the book, its holder stores the depth and publishes the event.
    const res = await post(b.base, '/orders', { account: 'alice', symbol, side: 'buy', qty: 3, price: '12345.5' });
    expect(res.status).toBe(202);
    const storedMs = await fresh(async () => (await store.depths([symbol]))[0]?.bids[0]?.priceTicks === '123455000', 5000, 'depth not stored');
    const realMs = await fresh(() => both('12345.5000'), BOOKS_BOUND_MS, "the holder's event did not drop the cached books");
    const after = await Promise.all([get(a), get(b), get(a), get(b)]);
    expect(after.map((r) => bidOf(r.books, symbol))).toEqual(after.map(() => '12345.5000'));
    expect(after.slice(2).map((r) => r.cache)).toEqual(['HIT', 'HIT']);
    // The per-symbol page follows its own tag the same way.
    const one = (await (await fetch(`${a.base}/market/books/${symbol}`)).json()) as Book;
    expect(one.bids[0]).toMatchObject({ price: '12345.5000', qty: 3 });
    expect((await fetch(`${a.base}/market/books/NOPE${tag().toUpperCase()}`)).status).toBe(404);
    process.stdout.write(`books cache: event → fresh page on both instances ${manualMs} ms (manual), ${realMs} ms after the holder stored the depth (order → stored ${storedMs} ms)\n`);
  });

  it('shows only listed symbols on /market/books and the page', async () => {
    const junk = `J${tag().toUpperCase()}`;
    await store.setDepth([{ symbol: junk, bids: [{ priceTicks: '10000', qty: 1, orders: 1 }], asks: [] }]);
    await a.app.get(BusService).publish<DepthChanged>(BOOKS_CHANGED_TOPIC, { shard: 0, symbols: [junk] });
    await new Promise((r) => setTimeout(r, 300));
    const books = (await (await fetch(`${a.base}/market/books`)).json()) as { symbol: string }[];
    expect(books.map((x) => x.symbol)).not.toContain(junk);
    expect(books.map((x) => x.symbol)).toContain('DUNE');
    expect(await (await fetch(`${b.base}/`)).text()).not.toContain(junk);
    expect((await fetch(`${b.base}/market/candles/${junk}`)).status).toBe(404);
  });

  it('defers sealing a minute until the candles group has been handed the trades published after it', async () => {
    // Trades of the current minute, folded; then every instance stops, and one more trade waits undelivered.
    const symbol = 'BOLT';
    const run = tag();
    const t = (n: number): Trade => ({
      id: `G${run}.${n}`, shard: shardOf(symbol), tradeSeq: n, symbol, priceTicks: '1000000', qty: 1, notionalTicks: '1000000',
      buyOrderId: 'b', sellOrderId: 's', buyAccount: `g-${run}-b`, sellAccount: `g-${run}-s`, takerSide: 'buy', at: Date.now(), inputSeq: n,
    });
    const first = t(1);
    const minute = Math.floor(first.at / MINUTE) * MINUTE;
    await bus.publish<Trade>(TRADES_TOPIC, first);
    await until(async () => (await store.candles(symbol, MINUTE, 5)).some((c) => c.start === minute && c.trades >= 1), 10_000, () => 'not folded');
    closed = true;
    await Promise.all([a.app.close(), b.app.close()]);
    // A process with the sealer only (no market-data groups, no schedule loop), listing just this symbol.
    const mod = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { url: valkey.url }, scheduler: false })],
      providers: [
        { provide: STORE_URL, useValue: valkey.url },
        { provide: EXCHANGE_CONFIG, useValue: buildExchangeConfig({ symbols: [symbol] }, 'test-secret') },
        ExchangeStore,
        CandleSealStore,
        CandleSealer,
      ],
    }).compile();
    sealerOnly = mod.createNestApplication({ logger: ['error'] });
    await sealerOnly.init();
    const sealer = sealerOnly.get(CandleSealer);
    const own = sealerOnly.get(BusService);
    await own.publish<Trade>(TRADES_TOPIC, t(2));
    // As if the seal ran once the minute had been closed long enough: the group has not been handed
    // anything published after the minute's end + SEAL_LAG_MS, so the minute waits.
    const later = minute + MINUTE + SEAL_LAG_MS + 1000;
    expect(await sealer.sealClosed(later)).toEqual({ sealed: 0, announced: 0 });
    expect(await sealerOnly.get(CandleSealStore).sealed(symbol)).toEqual([]);
    // The group catches up (moved to the log's end, as its members would): the minute is sealed.
    await sealerOnly.get(ExchangeStore).client.xgroup('SETID', `emq:{${TRADES_TOPIC}}:bus:log`, 'candles', '$');
    expect(await sealer.sealClosed(later)).toEqual({ sealed: 1, announced: 1 });
    expect((await sealerOnly.get(CandleSealStore).sealed(symbol)).map((c) => [c.start, c.trades])).toEqual([[minute, 1]]);
  });
});
