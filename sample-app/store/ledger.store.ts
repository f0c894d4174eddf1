/**
 * The ledger's operations on the store's client: opening balances, reservations, settlement and
 * the reads of an account. `ExchangeStore` exposes them as methods; the Lua is ledger.scripts.ts.
 * Amounts are `bigint` here and decimal strings on the wire to Valkey (money.ts).
 */
import type { Redis } from 'iovalkey';
import type { OrderState, Trade } from '../engine/engine.types.js';
import { ticksToWire } from '../engine/money.js';
import { FUND, MARK_SEQUENCED, RELEASE_ENDED, RESERVE, SETTLE, SWEEP, UNCLAIM } from './ledger.scripts.js';

/** The ledger's keys, all in the `{ledger}` slot. */
export const LEDGER_KEYS = {
  funded: 'x:{ledger}:funded',
  /** The ids of the trades settled in one hour (of the trade's time), kept `SETTLED_KEEP_MS`. */
  settled: (hour: number) => `x:{ledger}:settled:${hour}`,
  /** How many trades were ever settled. */
  settledCount: 'x:{ledger}:settled-n',
  account: (account: string) => `x:{ledger}:acct:${account}`,
  accounts: 'x:{ledger}:accounts',
  reservation: (orderId: string) => `x:{ledger}:res:${orderId}`,
  scratch: 'x:{ledger}:scratch',
  /** Order ids reserved for and not yet sequenced by the intake, scored by when they reserved (ms). */
  unsequenced: 'x:{ledger}:unsequenced',
};
const K = LEDGER_KEYS;

/**
 * How long the ids of settled trades are kept: 48 h after their hour. A settlement step re-run
 * later than that would settle its trade twice; steps retry within seconds (5 attempts), and a
 * dead one is replayed by an operator, so 48 h leaves a wide margin while bounding the set.
 */
export const SETTLED_KEEP_MS = 48 * 3_600_000;

/** How long a spent reservation is kept after its order ended (a retried placement finds it): 7 days, as client order ids. */
export const RESERVATION_KEEP_S = 7 * 24 * 3600;

/** An account in the ledger: cash and units held, and what open orders reserve of them. */
export interface LedgerAccount {
  /** Cash held, in ticks (opening balance ± settled trades). */
  readonly cashTicks: bigint;
  /** Cash reserved by open buy orders, in ticks. */
  readonly reservedTicks: bigint;
  /** Per symbol: units held and reserved by open sell orders (symbols with both zero are left out). */
  readonly units: Readonly<Record<string, { readonly held: bigint; readonly reserved: bigint }>>;
}

/** What an order reserves: `per` × `qty` of cash (a buy) or units of `symbol` (a sell). */
export interface ReservationRequest {
  readonly orderId: string;
  readonly account: string;
  /** `undefined`: cash; a symbol: its units. */
  readonly symbol?: string;
  /** What one unit of the order reserves: the limit price or collar (ticks) for a buy, 1 for a sell. */
  readonly per: bigint;
  readonly qty: number;
  /** Reserve even when it makes the available amount negative (`allowNegativeCash` / `allowShort`). */
  readonly overdraft: boolean;
}

/** The outcome of a reservation: made (or made before, `repeat`), or refused with what was short. */
export type ReserveOutcome =
  | { readonly ok: true; readonly repeat: boolean }
  | { readonly ok: false; readonly available: bigint; readonly needed: bigint };

const neg = (amount: bigint): string => ticksToWire(-amount);
const bigintOr0 = (v: string | null | undefined): bigint => (v ? BigInt(v) : 0n);

/** Funds `account` with its opening balances, once (a `funded` set); true when this call funded it. */
export async function fund(client: Redis, account: string, cashTicks: bigint, units: Readonly<Record<string, bigint>>): Promise<boolean> {
  const pairs = Object.entries(units).flatMap(([sym, n]) => (n === 0n ? [] : [sym, n.toString()]));
  return (await FUND.run(client, [K.funded, K.account(account), K.accounts], [account, ticksToWire(cashTicks), ...pairs])) === 1;
}

/** Reserves for one order, atomically and once per order id (see RESERVE). */
export async function reserve(client: Redis, r: ReservationRequest): Promise<ReserveOutcome> {
  const [held, reserved] = r.symbol === undefined ? ['cash', 'rcash'] : [`u:${r.symbol}`, `r:${r.symbol}`];
  const needed = r.per * BigInt(r.qty);
  const args = [held, reserved, r.per.toString(), needed.toString(), r.overdraft ? '1' : '0', r.account, Date.now(), r.orderId];
  const keys = [K.account(r.account), K.reservation(r.orderId), K.scratch, K.unsequenced];
  const [code, available] = (await RESERVE.run(client, keys, args)) as [number, string];
  if (code === 0) return { ok: false, available: BigInt(available), needed };
  return { ok: true, repeat: code === 2 };
}

/**
 * The intake's check: true when the ledger holds a reservation for `orderId` (made by order
 * entry, kept 7 days after the order ended), which it marks sequenced; false when there is none.
 */
export async function markSequenced(client: Redis, orderId: string): Promise<boolean> {
  return (await MARK_SEQUENCED.run(client, [K.reservation(orderId), K.unsequenced], [orderId])) === 1;
}

/** Up to `limit` order ids that reserved before `before` (ms) and have not been sequenced, oldest first. */
export async function unsequenced(client: Redis, before: number, limit: number): Promise<string[]> {
  return client.zrangebyscore(K.unsequenced, '-inf', `(${before}`, 'LIMIT', 0, limit);
}

/**
 * Releases the reservations of these orders unless the intake has sequenced them meanwhile;
 * resolves to how many it released and the accounts they were of.
 */
export async function sweep(client: Redis, orderIds: readonly string[]): Promise<{ released: number; accounts: string[] }> {
  if (orderIds.length === 0) return { released: 0, accounts: [] };
  const accounts = await Promise.all(orderIds.map((id) => client.hget(K.reservation(id), 'acct')));
  const keys = [K.unsequenced, ...orderIds.flatMap((id, i) => [K.account(accounts[i] ?? ''), K.reservation(id)])];
  const released = (await SWEEP.run(client, keys, orderIds)) as number;
  return { released, accounts: [...new Set(accounts.flatMap((a) => (a === null ? [] : [a])))] };
}

/** Deletes a client order id claim made for `orderId` (an order refused before it was enqueued). */
export async function unclaim(client: Redis, claimKey: string, orderId: string): Promise<void> {
  await UNCLAIM.run(client, [claimKey], [`${orderId} `]);
}

/** The `per` of some orders' reservations (undefined: none, or already expired). */
async function perOf(client: Redis, orderIds: readonly string[]): Promise<(bigint | undefined)[]> {
  const pers = await Promise.all(orderIds.map((id) => client.hget(K.reservation(id), 'per')));
  return pers.map((p) => (p === null ? undefined : BigInt(p)));
}

/**
 * Releases the unfilled rest ((qty − filled) × per) of the orders among `states` that ended
 * (filled, cancelled), once per order id. Resolves to the accounts whose reservations it read.
 */
export async function releaseEnded(client: Redis, states: readonly OrderState[]): Promise<string[]> {
  const ended = states.filter((s) => s.status === 'filled' || s.status === 'cancelled');
  const accounts = new Set<string>();
  for (let i = 0; i < ended.length; i += 200) {
    const batch = ended.slice(i, i + 200);
    const pers = await perOf(client, batch.map((s) => s.orderId));
    const keys: string[] = [];
    const rests: string[] = [];
    batch.forEach((s, j) => {
      const per = pers[j];
      if (per === undefined) return;
      keys.push(K.account(s.account), K.reservation(s.orderId));
      rests.push(neg(per * BigInt(s.qty - s.filledQty)));
      accounts.add(s.account);
    });
    if (keys.length > 0) await RELEASE_ENDED.run(client, keys, [RESERVATION_KEEP_S, ...rests]);
  }
  return [...accounts];
}

/**
 * Settles one trade, once per trade id: the buyer pays the notional and gets the units, the
 * seller the reverse, and the filled part (qty × per) of both orders' reservations is released.
 * True when this call moved them.
 */
export async function settle(client: Redis, t: Trade): Promise<boolean> {
  const [buyPer, sellPer] = await perOf(client, [t.buyOrderId, t.sellOrderId]);
  const notional = BigInt(t.notionalTicks);
  const hour = Math.floor(t.at / 3_600_000);
  const keys = [K.settled(hour), K.account(t.buyAccount), K.account(t.sellAccount), K.accounts, K.reservation(t.buyOrderId), K.reservation(t.sellOrderId), K.settledCount];
  const qty = BigInt(t.qty);
  const releases = [neg((buyPer ?? 0n) * qty), neg((sellPer ?? 0n) * qty)];
  const args = [RESERVATION_KEEP_S, t.id, t.symbol, qty.toString(), neg(qty), ticksToWire(notional), neg(notional), t.buyAccount, t.sellAccount, ...releases, SETTLED_KEEP_MS];
  return (await SETTLE.run(client, keys, args)) === 1;
}

/** How many trades the ledger ever settled. */
export async function settledCount(client: Redis): Promise<number> {
  return Number((await client.get(K.settledCount)) ?? 0);
}

/** An account as the ledger holds it (exact: every amount read as a `bigint` from its string). */
export async function readLedger(client: Redis, account: string): Promise<LedgerAccount> {
  const h = await client.hgetall(K.account(account));
  const units: Record<string, { held: bigint; reserved: bigint }> = {};
  for (const [f, v] of Object.entries(h)) {
    if (!f.startsWith('u:') && !f.startsWith('r:')) continue;
    const sym = f.slice(2);
    units[sym] ??= { held: 0n, reserved: 0n };
    if (f.startsWith('u:')) units[sym].held = BigInt(v);
    else units[sym].reserved = BigInt(v);
  }
  for (const [sym, u] of Object.entries(units)) if (u.held === 0n && u.reserved === 0n) delete units[sym];
  return { cashTicks: bigintOr0(h.cash), reservedTicks: bigintOr0(h.rcash), units };
}
