/**
 * Accounts, keys and the ledger of the sample exchange: API keys (401/403), reservations before
 * an order is accepted (422 with a reason), reservations released exactly after a cancel and
 * after fills, and positions cached per user — one account's cached response never served to
 * another. Accounts are random per run; the instance runs on its own Valkey.
 */
import { randomBytes } from 'node:crypto';
import { BusService, QueueService } from '../../src/index.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import type { PositionsView } from '../../sample-app/accounts/positions.service.js';
import { ReservationSweeper, UNSEQUENCED_AFTER_MS } from '../../sample-app/accounts/reservation-sweeper.processor.js';
import { deriveApiKey } from '../../sample-app/config/exchange.config.js';
import type { PlaceCommand } from '../../sample-app/engine/engine.types.js';
import { shardOf } from '../../sample-app/engine/ids.js';
import { commandTopic, ORDERS_QUEUE } from '../../sample-app/exchange.names.js';
import type { InsufficientBody, OrderView } from '../../sample-app/orders/order-entry.service.js';
import { ExchangeStore } from '../../sample-app/store/exchange.store.js';
import { LEDGER_KEYS } from '../../sample-app/store/ledger.store.js';
import { fetchAs, logOf, post, startLocal, testExchangeConfig, until, type LocalInstance } from './exchange.helpers.js';

const run = randomBytes(3).toString('hex');
/** Accounts of this run: a poor buyer, a seller with few units, and two traders. */
const POOR = `poor-${run}`;
const FEW = `few-${run}`;
const BUYER = `buyer-${run}`;
const SELLER = `seller-${run}`;
const RICH = `rich-${run}`;
const SYM = 'EPIC';
/** What POOR tries to buy (another book, so its resting buy meets none of the EPIC sells). */
const CASH_SYM = 'FLUX';

describe('sample exchange: accounts, keys and the ledger', () => {
  let valkey: EmbeddedValkey;
  let inst: LocalInstance;
  let store: ExchangeStore;
  const url = (path: string) => `${inst.base}${path}`;
  const json = async <T>(res: Response | Promise<Response>): Promise<T> => (await (await res).json()) as T;
  const positions = (account: string) => json<PositionsView>(fetchAs(account, url(`/accounts/${account}/positions`)));
  const order = (account: string, id: string) => json<OrderView>(fetchAs(account, url(`/orders/${id}`)));
  const place = async (body: Record<string, unknown>): Promise<string> => {
    const res = await post(inst.base, '/orders', body);
    expect(res.status).toBe(202);
    return (await json<{ orderId: string }>(res)).orderId;
  };

  beforeAll(async () => {
    valkey = await startEmbeddedValkey();
    const config = testExchangeConfig([
      { id: POOR, cash: '1000' },
      { id: FEW, cash: '0', units: { [SYM]: '5' } },
      { id: BUYER, cash: '100000.5', units: {} },
      { id: SELLER, cash: '0', units: { [SYM]: '1000' } },
      { id: RICH, cash: '10000000000000', units: {} },
    ]);
    inst = await startLocal(valkey.url, 'acc', { config });
    store = inst.app.get(ExchangeStore);
  });
  afterAll(async () => {
    await inst?.app.close();
    await valkey?.stop();
  });

  it('answers 401 without a key, with an unknown key, and with a key one character off', async () => {
    const body = { account: POOR, symbol: SYM, side: 'buy', qty: 1, price: 1 };
    const noKey = await fetch(url('/orders'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect(noKey.status).toBe(401);
    expect(await json<{ message: string }>(noKey)).toMatchObject({ message: 'an x-api-key header is required' });
    const good = deriveApiKey('dev-secret', POOR);
    const off = `${good.slice(0, -1)}${good.endsWith('0') ? '1' : '0'}`;
    for (const key of ['k_nope', off, deriveApiKey('another-secret', POOR)]) {
      expect((await fetch(url(`/accounts/${POOR}/positions`), { headers: { 'x-api-key': key } })).status).toBe(401);
      expect((await fetch(url('/orders'), { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify(body) })).status).toBe(401);
    }
    expect((await fetch(url('/orders/not-an-id'))).status).toBe(401);
    expect((await fetch(url('/orders/not-an-id'), { method: 'DELETE' })).status).toBe(401);
    expect((await fetchAs(POOR, url(`/accounts/${POOR}/positions`))).status).toBe(200);
    // Public routes need no key.
    expect((await fetch(url('/'))).status).toBe(200);
  });

  it("answers 403 for an order, a read, a cancel or the positions of another account's key, 404 for no order", async () => {
    expect((await post(inst.base, '/orders', { account: SELLER, symbol: SYM, side: 'sell', qty: 1, price: 500 }, BUYER)).status).toBe(403);
    const id = await place({ account: SELLER, symbol: SYM, side: 'sell', qty: 1, price: 500 });
    await until(async () => (await order(SELLER, id)).status === 'open', 5000, () => 'not on the book');
    expect((await fetchAs(BUYER, url(`/orders/${id}`))).status).toBe(403);
    expect((await fetchAs(BUYER, url(`/orders/${id}`), 'DELETE')).status).toBe(403);
    expect((await fetchAs(BUYER, url(`/accounts/${SELLER}/positions`))).status).toBe(403);
    expect((await fetchAs(BUYER, url(`/accounts/${SELLER}/risk`))).status).toBe(403);
    expect((await fetchAs(BUYER, url('/orders/not-an-id'))).status).toBe(404);
    // The refused cancel did nothing: the owner still sees it open, and cancels it.
    expect((await order(SELLER, id)).status).toBe('open');
    expect((await fetchAs(SELLER, url(`/orders/${id}`), 'DELETE')).status).toBe(202);
    await until(async () => (await positions(SELLER)).units[SYM].reserved === 0, 5000, () => 'the sell reservation was not released');
    // An order without an account is the key's.
    const own = await json<{ orderId: string }>(post(inst.base, '/orders', { symbol: SYM, side: 'sell', qty: 1, price: 600 }, SELLER));
    expect((await order(SELLER, own.orderId)).account).toBe(SELLER);
    expect((await fetchAs(SELLER, url(`/orders/${own.orderId}`), 'DELETE')).status).toBe(202);
    await until(async () => (await store.holdings(SELLER)).units[SYM].reserved === 0n, 5000, () => 'the second sell reservation was not released');
  });

  it('refuses with 422 and a reason an order that would overdraw cash or go short, writing nothing', async () => {
    const before = await store.holdings(POOR);
    const buy = await post(inst.base, '/orders', { account: POOR, clientOrderId: 'big', symbol: CASH_SYM, side: 'buy', qty: 11, price: '100' });
    expect(buy.status).toBe(422);
    expect(await json<InsufficientBody>(buy)).toMatchObject({
      error: 'insufficient-funds',
      available: '1000.0000',
      needed: '1100.0000',
      reason: `buying 11 ${CASH_SYM} at 100.0000 reserves 1100.0000 of cash; account ${POOR} has 1000.0000 available`,
    });
    // A market buy reserves at the collar (100,000 per unit by default).
    expect(await json<InsufficientBody>(post(inst.base, '/orders', { account: POOR, symbol: CASH_SYM, side: 'buy', type: 'market', qty: 1 }))).toMatchObject({ error: 'insufficient-funds', needed: '100000.0000' });
    const sell = await post(inst.base, '/orders', { account: FEW, symbol: SYM, side: 'sell', qty: 6, price: 1 });
    expect(sell.status).toBe(422);
    expect(await json<InsufficientBody>(sell)).toMatchObject({ error: 'insufficient-units', available: '5', needed: '6' });
    expect(await store.holdings(POOR)).toEqual(before);
    expect(await store.holdings(FEW)).toEqual({ cashTicks: 0n, reservedTicks: 0n, units: { [SYM]: { held: 5n, reserved: 0n } } });
    // The refused order released its client order id: the same id now places a smaller order (not a 409).
    const fits = await post(inst.base, '/orders', { account: POOR, clientOrderId: 'big', symbol: CASH_SYM, side: 'buy', qty: 10, price: '100' });
    expect(fits.status).toBe(202);
    // Exactly what it reserves is no longer available: 10 × 100 of 1000.
    expect(await positions(POOR)).toMatchObject({ cash: '1000.0000', reserved: '1000.0000', available: '0.0000' });
    expect((await post(inst.base, '/orders', { account: POOR, symbol: CASH_SYM, side: 'buy', qty: 1, price: '0.0001' })).status).toBe(422);
    // A retry of the same request is the same order and reserves nothing more.
    expect((await post(inst.base, '/orders', { account: POOR, clientOrderId: 'big', symbol: CASH_SYM, side: 'buy', qty: 10, price: '100' })).status).toBe(200);
    expect((await store.holdings(POOR)).reservedTicks).toBe(10_000_000n);
  });

  it('buries a placement enqueued behind order entry (no reservation), never putting it on a log', async () => {
    const queues = inst.app.get(QueueService);
    const bus = inst.app.get(BusService);
    const logged = (await logOf(bus, commandTopic(shardOf(SYM)))).length;
    const orderId = queues.mintId();
    const cmd: PlaceCommand = { kind: 'place', orderId, clientOrderId: 'sneak', account: POOR, symbol: SYM, side: 'buy', type: 'limit', qty: 1_000_000, priceTicks: '1000000', acceptedAt: Date.now() };
    await queues.enqueue(ORDERS_QUEUE, cmd, { id: orderId });
    const status = async () => (await queues.getJob(ORDERS_QUEUE, orderId))?.status;
    await until(async () => (await status()) === 'dead', 5000, () => 'the placement was not buried');
    expect((await queues.getJob(ORDERS_QUEUE, orderId))?.error).toContain(`order ${orderId} has no reservation`);
    expect((await logOf(bus, commandTopic(shardOf(SYM)))).length).toBe(logged);
  });

  it('releases reservations exactly: the rest after a cancel, the filled part at settlement', async () => {
    const cash0 = await positions(BUYER);
    expect(cash0).toMatchObject({ cash: '100000.5000', reserved: '0.0000', available: '100000.5000' });
    // A resting sell of 4 at 99.9999; a buy of 10 at 100.0001 takes the 4 at 99.9999 and rests 6.
    const sell = await place({ account: SELLER, symbol: SYM, side: 'sell', qty: 4, price: '99.9999' });
    await until(async () => (await order(SELLER, sell)).status === 'open', 5000, () => 'sell not on the book');
    expect((await positions(SELLER)).units[SYM]).toEqual({ held: 1000, reserved: 4 });
    const buy = await place({ account: BUYER, symbol: SYM, side: 'buy', qty: 10, price: '100.0001' });
    // Settled: the buyer paid 4 × 99.9999 and still reserves 6 × 100.0001; the seller's 4 units left.
    await until(async () => (await positions(BUYER)).units[SYM]?.held === 4, 10_000, () => 'not settled');
    expect(await order(BUYER, buy)).toMatchObject({ status: 'partially-filled', filledQty: 4, avgPrice: '99.9999' });
    expect(await positions(BUYER)).toMatchObject({ cash: '99600.5004', reserved: '600.0006', available: '99000.4998', units: { [SYM]: { held: 4, reserved: 0 } } });
    await until(async () => (await positions(SELLER)).cash === '399.9996', 5000, () => 'seller not settled');
    expect((await positions(SELLER)).units[SYM]).toEqual({ held: 996, reserved: 0 });
    // Cancel the rest: everything it reserved is free again.
    expect((await fetchAs(BUYER, url(`/orders/${buy}`), 'DELETE')).status).toBe(202);
    await until(async () => (await positions(BUYER)).reserved === '0.0000', 5000, () => 'the rest was not released');
    expect(await positions(BUYER)).toMatchObject({ cash: '99600.5004', reserved: '0.0000', available: '99600.5004' });
    expect(await store.holdings(BUYER)).toEqual({ cashTicks: 996_005_004n, reservedTicks: 0n, units: { [SYM]: { held: 4n, reserved: 0n } } });
  });

  it("keeps each account's reserved amounts equal to what its open orders still reserve", async () => {
    // Two open orders: POOR's buy of 10 FLUX at 100 (earlier test) and a fresh sell of SELLER's.
    const sell = await place({ account: SELLER, symbol: SYM, side: 'sell', qty: 7, price: '5000' });
    await until(async () => (await order(SELLER, sell)).status === 'open', 5000, () => 'sell not on the book');
    const open = new Map<string, bigint>();
    for (const key of await store.client.keys(LEDGER_KEYS.reservation('*'))) {
      const r = await store.client.hgetall(key);
      if (r.ended !== '1') open.set(`${r.acct} ${r.field}`, (open.get(`${r.acct} ${r.field}`) ?? 0n) + BigInt(r.left));
    }
    for (const account of [POOR, FEW, BUYER, SELLER]) {
      const l = await store.holdings(account);
      expect(l.reservedTicks).toBe(open.get(`${account} rcash`) ?? 0n);
      for (const [sym, u] of Object.entries(l.units)) expect(u.reserved).toBe(open.get(`${account} r:${sym}`) ?? 0n);
    }
    expect(open.get(`${POOR} rcash`)).toBe(10_000_000n);
    expect(open.get(`${SELLER} r:${SYM}`)).toBe(7n);
  });

  it('compares and moves amounts past 2^53 ticks exactly in the ledger scripts', async () => {
    // 10^13 units = 10^17 ticks: a double cannot tell 10^17 from 10^17 + 1.
    const big = 100_000_000_000_000_000n;
    expect(Number(big) === Number(big + 1n)).toBe(true);
    const reserve = (n: number, per: bigint) => store.reserve({ orderId: `big-${run}-${n}`, account: RICH, per, qty: 1, overdraft: false });
    expect(await reserve(1, big + 1n)).toEqual({ ok: false, available: big, needed: big + 1n });
    expect(await reserve(2, big - 1n)).toEqual({ ok: true, repeat: false });
    expect(await reserve(2, big - 1n)).toEqual({ ok: true, repeat: true });
    expect(await store.holdings(RICH)).toEqual({ cashTicks: big, reservedTicks: big - 1n, units: {} });
    expect(await positions(RICH)).toMatchObject({ cash: '10000000000000.0000', reserved: '9999999999999.9999', available: '0.0001' });
    expect(await reserve(3, 2n)).toMatchObject({ ok: false, available: 1n });
    // The order ends unfilled: its whole reservation comes back, once.
    const ended = { orderId: `big-${run}-2`, clientOrderId: 'c', account: RICH, symbol: SYM, side: 'buy' as const, type: 'limit' as const, qty: 1, acceptedAt: 0, filledQty: 0, filledNotionalTicks: '0', status: 'cancelled' as const, seq: 1 };
    await store.releaseEnded([ended]);
    await store.releaseEnded([ended]);
    expect(await store.holdings(RICH)).toEqual({ cashTicks: big, reservedTicks: 0n, units: {} });
    expect((await positions(RICH)).available).toBe('10000000000000.0000');
  });

  it('releases the reservation of a placement that never reached the queue, once it is 10 minutes old', async () => {
    const queues = inst.app.get(QueueService);
    const sweeper = inst.app.get(ReservationSweeper);
    // A request that reserved and died before its enqueue (as if the instance were killed there).
    const orderId = queues.mintId();
    expect(await store.reserve({ orderId, account: FEW, symbol: SYM, per: 1n, qty: 3, overdraft: false })).toEqual({ ok: true, repeat: false });
    expect((await store.holdings(FEW)).units[SYM]).toEqual({ held: 5n, reserved: 3n });
    // Younger than 10 minutes: kept (its client may still retry).
    expect(await sweeper.sweepBefore(Date.now() - UNSEQUENCED_AFTER_MS)).toEqual({ candidates: 0, released: 0 });
    // As if 10 minutes had passed: released, and only it (every order placed through the API was sequenced).
    expect(await sweeper.sweepBefore(Date.now() + 1)).toMatchObject({ released: 1 });
    expect((await store.holdings(FEW)).units[SYM]).toEqual({ held: 5n, reserved: 0n });
    expect((await store.holdings(POOR)).reservedTicks).toBe(10_000_000n);
    // Enqueued after the sweep, the intake buries it: nothing trades without its money set aside.
    const cmd: PlaceCommand = { kind: 'place', orderId, clientOrderId: 'late', account: FEW, symbol: SYM, side: 'sell', type: 'limit', qty: 3, priceTicks: '10000', acceptedAt: Date.now() };
    await queues.enqueue(ORDERS_QUEUE, cmd, { id: orderId });
    await until(async () => (await queues.getJob(ORDERS_QUEUE, orderId))?.status === 'dead', 5000, () => 'the swept placement was not buried');
    expect(await sweeper.sweepBefore(Date.now() + 1)).toEqual({ candidates: 0, released: 0 });
  });

  it("caches positions per user: one account's cached response is never served to another", async () => {
    const get = (as: string, of: string) => fetchAs(as, url(`/accounts/${of}/positions`));
    const first = await get(FEW, FEW);
    expect(first.headers.get('x-cache')).toBe('MISS');
    const mine = await json<PositionsView>(first);
    const again = await get(FEW, FEW);
    expect(again.headers.get('x-cache')).toBe('HIT');
    expect((await json<PositionsView>(again)).readAt).toBe(mine.readAt);
    // Another account reads its own positions: its own value, not the cached one of FEW.
    const other = await json<PositionsView>(get(SELLER, SELLER));
    expect(other.account).toBe(SELLER);
    expect(other.units[SYM]).toEqual({ held: 996, reserved: 7 });
    // And cannot read FEW's, cached or not.
    const theirs = await get(SELLER, FEW);
    expect(theirs.status).toBe(403);
    expect(theirs.headers.get('x-cache')).toBeNull();
    // A new reservation evicts the owner's cached positions.
    await place({ account: FEW, symbol: SYM, side: 'sell', qty: 2, price: '7000' });
    const after = await get(FEW, FEW);
    expect(after.headers.get('x-cache')).toBe('MISS');
    expect((await json<PositionsView>(after)).units[SYM]).toEqual({ held: 5, reserved: 2 });
  });
});
