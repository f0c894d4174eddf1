/** A deterministic stream of orders, for the load script and the tests. */
import { deriveApiKey } from '../config/exchange.config.js';
import type { PlacementObserver } from './instance-pool.js';

/** A deterministic pseudo-random source (mulberry32): `r(k)` is in 0..k−1. */
export function rng(seed: number): (k: number) => number {
  let s = seed | 0;
  return (k) => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t ^= t + Math.imul(t ^ (t >>> 7), 61 | t);
    return ((t ^ (t >>> 14)) >>> 0) % k;
  };
}

/** An order as a client sends it (the body of `POST /orders`), with its client order id. */
export type LoadOrder = {
  readonly account: string;
  readonly clientOrderId: string;
  readonly symbol: string;
  readonly side: 'buy' | 'sell';
  readonly type: 'limit' | 'market';
  readonly qty: number;
  /** Limit price in units (limit orders only). */
  readonly price?: number | string;
};

/**
 * `n` orders over `symbols`: limits around 100 (97.5..102.5, 0.5 apart, so books cross often),
 * 10 % market orders, 1..10 units, 10 accounts; client order ids `<prefix>-<i>`.
 */
export function orderFlow(seed: number, n: number, symbols: readonly string[], prefix: string): LoadOrder[] {
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

/** The secret the exchange derives its accounts' keys from (its `EXCHANGE_SECRET`, default `dev-secret`). */
export const loadSecret = (): string => process.env.EXCHANGE_SECRET?.trim() || 'dev-secret';

/** The `x-api-key` header of `account` (none without an account), its key derived from `secret`. */
export const keyHeader = (account: string | undefined, secret = loadSecret()): Record<string, string> =>
  account === undefined ? {} : { 'x-api-key': deriveApiKey(secret, account) };

/** The `account` field of a body, if it has one. */
const accountIn = (body: unknown): string | undefined =>
  typeof body === 'object' && body !== null && 'account' in body && typeof body.account === 'string' ? body.account : undefined;

/** POSTs a JSON body as `account` (its API key in `x-api-key`; default: the body's `account`, if any). */
export const post = (base: string, path: string, body: unknown, account = accountIn(body), secret?: string): Promise<Response> =>
  fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...keyHeader(account, secret) }, body: JSON.stringify(body) });

/**
 * Places `orders`, `parallel` at a time, order i on `bases()[i % n]`; a request that fails
 * (instance gone) is retried on the next base with the same client order id — the idempotent
 * placement makes that safe. Each order is sent with its account's key (derived from
 * `secret`). With `perSecond`, order i is sent no sooner than i / perSecond s after the start
 * (a paced run). `observer` sees each request's outcome (load/instance-pool.ts). Resolves to the
 * order ids by client order id.
 */
export async function placeAll(
  bases: () => readonly string[],
  orders: readonly LoadOrder[],
  parallel = 16,
  perSecond?: number,
  secret = loadSecret(),
  observer?: PlacementObserver,
): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  const t0 = performance.now();
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < orders.length; i = next++) {
      const due = perSecond ? t0 + (i * 1000) / perSecond - performance.now() : 0;
      if (due > 0) await new Promise((r) => setTimeout(r, due));
      let first: string | undefined;
      for (let attempt = 0; ; attempt++) {
        const bs = bases();
        const base = bs[(i + attempt) % bs.length];
        first ??= base;
        try {
          const res = await post(base, '/orders', orders[i], orders[i].account, secret).catch((err: unknown) => {
            observer?.result(base, 'unreachable');
            throw err;
          });
          if (res.status !== 202 && res.status !== 200) {
            observer?.result(base, res.status >= 500 ? 'unavailable' : 'refused');
            throw new Error(`POST /orders: ${res.status} ${await res.text()}`);
          }
          observer?.result(base, res.status === 200 ? 'repeat' : 'accepted', first);
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
