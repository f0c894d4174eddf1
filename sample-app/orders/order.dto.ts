import { BadRequestException, Injectable, type PipeTransform } from '@nestjs/common';
import type { OrderType, Side } from '../engine/engine.types.js';

/** A validated order, as accepted by `POST /orders`. */
export interface OrderInput {
  readonly account: string;
  /** The caller's id of the order: a retried POST with the same one places nothing new. */
  readonly clientOrderId?: string;
  readonly symbol: string;
  readonly side: Side;
  readonly type: OrderType;
  /** Whole units, 1..1,000,000. */
  readonly qty: number;
  /** Limit price (limit orders only), > 0, at most 100,000, at most 4 decimal places. */
  readonly price?: number;
}

/** The outcome of validation: the order, or every problem found. */
export type OrderValidation = { readonly ok: true; readonly order: OrderInput } | { readonly ok: false; readonly problems: string[] };

const FIELDS = ['account', 'clientOrderId', 'symbol', 'side', 'type', 'qty', 'price'] as const;
/** Account and client order id grammar: also safe inside a Valkey key (no ":" or braces). */
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$/;
const CLIENT_ID_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const SYMBOL_RE = /^[A-Z][A-Z0-9.]{0,11}$/;
/** Largest quantity. */
export const MAX_QTY = 1_000_000;
/** Largest price (so price × qty in ticks stays an exact integer). */
export const MAX_PRICE = 100_000;
const PRICE_DECIMALS = 4;

const show = (v: unknown): string => {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : String(v);
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** True when `p` has at most `PRICE_DECIMALS` decimal places (tolerating binary float noise). */
const onTick = (p: number): boolean => {
  const scaled = p * 10 ** PRICE_DECIMALS;
  return Math.abs(scaled - Math.round(scaled)) < 1e-6;
};

function checkPrice(price: unknown, type: unknown, problems: string[]): void {
  if (type === 'market') {
    if (price !== undefined) problems.push('price must be absent for a market order');
    return;
  }
  if (price === undefined) {
    if (type === undefined || type === 'limit') problems.push('price is required for a limit order');
    return;
  }
  if (typeof price !== 'number' || !Number.isFinite(price)) problems.push(`price must be a number; got ${show(price)}`);
  else if (price <= 0) problems.push(`price must be positive; got ${price}`);
  else if (price > MAX_PRICE) problems.push(`price must be at most ${MAX_PRICE}; got ${price}`);
  else if (!onTick(price)) problems.push(`price must have at most ${PRICE_DECIMALS} decimal places; got ${price}`);
}

/**
 * Validates an untrusted value (a request body) as an order. Collects every problem rather than
 * stopping at the first; unknown fields are refused. `type` defaults to `limit`.
 */
export function validateOrder(input: unknown): OrderValidation {
  if (!isRecord(input)) return { ok: false, problems: [`body must be a JSON object, got ${show(input)}`] };
  const problems: string[] = [];
  for (const key of Object.keys(input)) {
    if (!(FIELDS as readonly string[]).includes(key)) problems.push(`unknown field ${JSON.stringify(key)}`);
  }
  for (const key of ['account', 'symbol', 'side', 'qty'] as const) {
    if (input[key] === undefined) problems.push(`${key} is required`);
  }
  const { account, clientOrderId, side, type, symbol, qty, price } = input;
  if (account !== undefined && (typeof account !== 'string' || !NAME_RE.test(account))) {
    problems.push(`account must be 1-32 letters, digits, "_", "." or "-", starting with a letter or digit; got ${show(account)}`);
  }
  if (clientOrderId !== undefined && (typeof clientOrderId !== 'string' || !CLIENT_ID_RE.test(clientOrderId))) {
    problems.push(`clientOrderId must be 1-64 letters, digits, "_", "." or "-", starting with a letter or digit; got ${show(clientOrderId)}`);
  }
  if (symbol !== undefined && (typeof symbol !== 'string' || !SYMBOL_RE.test(symbol))) {
    problems.push(`symbol must be 1-12 uppercase letters, digits or ".", starting with a letter; got ${show(symbol)}`);
  }
  if (side !== undefined && side !== 'buy' && side !== 'sell') problems.push(`side must be "buy" or "sell"; got ${show(side)}`);
  if (type !== undefined && type !== 'limit' && type !== 'market') problems.push(`type must be "limit" or "market"; got ${show(type)}`);
  if (qty !== undefined) {
    if (typeof qty !== 'number' || !Number.isInteger(qty)) problems.push(`qty must be a whole number; got ${show(qty)}`);
    else if (qty <= 0) problems.push(`qty must be positive; got ${qty}`);
    else if (qty > MAX_QTY) problems.push(`qty must be at most ${MAX_QTY}; got ${qty}`);
  }
  checkPrice(price, type, problems);
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    order: {
      account: account as string,
      ...(clientOrderId === undefined ? {} : { clientOrderId: clientOrderId as string }),
      symbol: symbol as string,
      side: side as Side,
      type: (type as OrderType | undefined) ?? 'limit',
      qty: qty as number,
      ...(price === undefined ? {} : { price: price as number }),
    },
  };
}

/** The 400 body of a refused order. */
export interface OrderProblemBody {
  readonly statusCode: 400;
  readonly error: 'Bad Request';
  readonly message: string;
  readonly problems: string[];
}

/**
 * A pipe for `@Body()`: passes a valid `OrderInput` or answers 400 with every problem, e.g.
 * `invalid order: side must be "buy" or "sell"; got "hold"`.
 */
@Injectable()
export class OrderValidationPipe implements PipeTransform<unknown, OrderInput> {
  /** Validates the body. */
  transform(value: unknown): OrderInput {
    const v = validateOrder(value);
    if (v.ok) return v.order;
    const body: OrderProblemBody = { statusCode: 400, error: 'Bad Request', message: `invalid order: ${v.problems.join('; ')}`, problems: v.problems };
    throw new BadRequestException(body);
  }
}
