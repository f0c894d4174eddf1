/**
 * Exact money, end to end: 11 trades of 999,999 units at 99,999.9999 between `whale-a` (buyer)
 * and `whale-b` (seller). In doubles the buyer's cash moves by −1099998898900.0012; exactly it is
 * −10999988989000011 ticks, "-1099998898900.0011". The engine, the order input, the trades, the
 * order views, the ledger and the API must all show the exact figure.
 */
import { MatchingEngine } from '../../sample-app/engine/matching-engine.js';
import type { PlaceCommand, Trade } from '../../sample-app/engine/engine.types.js';
import { formatUnits, parseUnits, ticksFromWire } from '../../sample-app/engine/money.js';
import { loadExchangeConfig } from '../../sample-app/config/exchange.config.js';
import type { OrderView } from '../../sample-app/orders/order-entry.service.js';
import { validateOrder } from '../../sample-app/orders/order.dto.js';
import { ExchangeStore } from '../../sample-app/store/exchange.store.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { keyHeader, post, startLocal, until, type LocalInstance } from './exchange.helpers.js';

const ROUNDS = 11;
const QTY = 999_999;
const PRICE = '99999.9999';
const PRICE_TICKS = 999_999_999n;
/** One trade's notional: 999,999 × 999,999,999 ticks. */
const NOTIONAL = 999_998_999_000_001n;
/** What the buyer pays over all rounds. */
const PAID = -10_999_988_989_000_011n;
const listed = new Set(loadExchangeConfig({}).symbols);

describe('exchange: exact money', () => {
  it('reads prices exactly: decimal strings and numbers with at most 4 decimals, nothing else', () => {
    const price = (p: unknown) => {
      const v = validateOrder({ account: 'whale-a', symbol: 'ACME', side: 'buy', qty: 1, price: p }, listed);
      return v.ok ? v.order.priceTicks : v.problems;
    };
    expect(price(PRICE)).toBe(PRICE_TICKS);
    expect(price(99999.9999)).toBe(PRICE_TICKS);
    expect(price('0.0001')).toBe(1n);
    expect(price(0.1)).toBe(1000n);
    expect(price('100000')).toBe(1_000_000_000n);
    expect(price(' 12.5 ')).toBe(125_000n);
    expect(price('100000.0001')).toEqual(['price must be at most 100000.0000; got "100000.0001"']);
    expect(price('99999.99999')).toEqual(['price must be a decimal with at most 4 decimal places, e.g. "99999.9999"; got "99999.99999"']);
    expect(price(0.00001)).toEqual(['price must be a decimal with at most 4 decimal places, e.g. "99999.9999"; got 0.00001']);
    expect(price('1e3')).toEqual(['price must be a decimal with at most 4 decimal places, e.g. "99999.9999"; got "1e3"']);
    expect(price(0)).toEqual(['price must be positive; got 0']);
    expect(price('-5')).toEqual(['price must be positive; got "-5"']);
    expect(price(true)).toEqual(['price must be a decimal string or a number; got true']);
    const bad = validateOrder({ account: 'whale-a', symbol: 'JUNK', side: 'buy', qty: 1.5, price: PRICE }, listed);
    expect(bad).toEqual({ ok: false, problems: ['symbol "JUNK" is not listed on this exchange', 'qty must be a whole number; got 1.5'] });
  });

  it('matches 11 × 999,999 at 99,999.9999 in the engine with every amount exact', () => {
    const e = new MatchingEngine(0);
    const cmd = (i: number, side: 'buy' | 'sell'): PlaceCommand => ({
      kind: 'place',
      orderId: `${side}-${i}`,
      clientOrderId: `${side}-${i}`,
      account: side === 'buy' ? 'whale-a' : 'whale-b',
      symbol: 'ACME',
      side,
      type: 'limit',
      qty: QTY,
      priceTicks: PRICE_TICKS.toString(),
      acceptedAt: 1000,
    });
    const trades: Trade[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      e.apply(cmd(i, 'sell'), 1000 + i);
      trades.push(...e.apply(cmd(i, 'buy'), 1000 + i).trades);
    }
    expect(trades.map((t) => [t.priceTicks, t.qty, t.notionalTicks])).toEqual(trades.map(() => [PRICE_TICKS.toString(), QTY, NOTIONAL.toString()]));
    const paid = trades.reduce((s, t) => s - ticksFromWire(t.notionalTicks), 0n);
    expect([paid, formatUnits(paid)]).toEqual([PAID, '-1099998898900.0011']);
    // The same in JS numbers rounds: the bug this replaces.
    expect(formatUnits(BigInt(Math.round(-ROUNDS * QTY * 99999.9999 * 10_000)))).not.toBe('-1099998898900.0011');
  });

  describe('through the HTTP API', () => {
    let valkey: EmbeddedValkey;
    let x: LocalInstance;
    const get = async <T>(path: string, account?: string): Promise<T> => {
      const res = await fetch(`${x.base}${path}`, { headers: keyHeader(account) });
      expect(res.status).toBe(200);
      return (await res.json()) as T;
    };

    beforeAll(async () => {
      valkey = await startEmbeddedValkey();
      x = await startLocal(valkey.url, 'money');
    });
    afterAll(async () => {
      await x?.app.close();
      await valkey?.stop();
    });

    it('refuses an unlisted symbol and an inexact price with 400, placing nothing', async () => {
      const res = await post(x.base, '/orders', { account: 'whale-a', symbol: 'JUNK', side: 'buy', qty: 1, price: '1.00001' }, 'whale-a');
      expect(res.status).toBe(400);
      expect(((await res.json()) as { problems: string[] }).problems).toEqual([
        'symbol "JUNK" is not listed on this exchange',
        'price must be a decimal with at most 4 decimal places, e.g. "99999.9999"; got "1.00001"',
      ]);
      const books = await get<{ symbol: string }[]>('/market/books');
      expect(books.map((b) => b.symbol)).not.toContain('JUNK');
    });

    it('trades 11 × 999,999 at 99,999.9999 between two whales and shows and stores every amount exactly', async () => {
      const store = x.app.get(ExchangeStore);
      const opening = await Promise.all(['whale-a', 'whale-b'].map((a) => store.holdings(a)));
      const buys: string[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        // The seller's price as a decimal string, the buyer's as a JSON number: both exact.
        const sell = await post(x.base, '/orders', { account: 'whale-b', clientOrderId: `ms-${i}`, symbol: 'EPIC', side: 'sell', qty: QTY, price: PRICE }, 'whale-b');
        const buy = await post(x.base, '/orders', { account: 'whale-a', clientOrderId: `mb-${i}`, symbol: 'EPIC', side: 'buy', qty: QTY, price: 99999.9999 }, 'whale-a');
        expect([sell.status, buy.status]).toEqual([202, 202]);
        buys.push(((await buy.json()) as { orderId: string }).orderId);
      }
      // Every buy filled at exactly the price.
      await until(async () => (await Promise.all(buys.map((id) => get<OrderView>(`/orders/${id}`, 'whale-a')))).every((v) => v.status === 'filled'), 20_000, () => 'the buys did not fill');
      for (const id of buys) expect(await get<OrderView>(`/orders/${id}`, 'whale-a')).toMatchObject({ status: 'filled', filledQty: QTY, price: PRICE, avgPrice: PRICE });
      // The trades, as the API shows them.
      const trades = (await get<{ buyAccount: string; price: string; notional: string; priceTicks: string; notionalTicks: string; qty: number }[]>('/market/trades?count=100')).filter(
        (t) => t.buyAccount === 'whale-a',
      );
      expect(trades.map((t) => [t.price, t.notional, t.priceTicks, t.notionalTicks, t.qty])).toEqual(
        Array.from({ length: ROUNDS }, () => [PRICE, formatUnits(NOTIONAL), PRICE_TICKS.toString(), NOTIONAL.toString(), QTY]),
      );
      expect(formatUnits(NOTIONAL)).toBe('99999899900.0001');
      // The ledger, once every trade settled: exactly 10999988989000011 ticks moved.
      const [a0, b0] = opening;
      await until(async () => (await store.holdings('whale-a')).cashTicks === a0.cashTicks + PAID, 20_000, () => 'the trades did not settle');
      const [a1, b1] = await Promise.all(['whale-a', 'whale-b'].map((a) => store.holdings(a)));
      expect([a1.cashTicks - a0.cashTicks, b1.cashTicks - b0.cashTicks]).toEqual([PAID, -PAID]);
      expect(formatUnits(a1.cashTicks - a0.cashTicks)).toBe('-1099998898900.0011');
      expect([a1.units.EPIC?.held, b1.units.EPIC?.held]).toEqual([a0.units.EPIC.held + BigInt(ROUNDS * QTY), b0.units.EPIC.held - BigInt(ROUNDS * QTY)]);
      expect([a1.reservedTicks, b1.units.EPIC.reserved]).toEqual([0n, 0n]);
      // And the API shows it: positions (cash = opening − paid) and the risk view (net notional).
      await until(async () => (await get<{ cash: string }>('/accounts/whale-a/positions', 'whale-a')).cash === formatUnits(a0.cashTicks + PAID), 5000, () => 'positions not updated');
      expect((await get<{ cash: string }>('/accounts/whale-a/positions', 'whale-a')).cash).toBe('8900001101099.9989');
      expect((await get<{ cash: string }>('/accounts/whale-b/positions', 'whale-b')).cash).toBe('11099998898900.0011');
      await until(async () => (await get<{ netNotional: string }>('/accounts/whale-a/risk', 'whale-a')).netNotional === '1099998898900.0011', 5000, () => 'risk not updated');
      expect((await get<{ netNotional: string }>('/accounts/whale-b/risk', 'whale-b')).netNotional).toBe('-1099998898900.0011');
    });
  });
});
