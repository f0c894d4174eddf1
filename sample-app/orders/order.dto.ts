import { BadRequestException, Inject, Injectable, type PipeTransform } from '@nestjs/common';
import { EXCHANGE_CONFIG, type ExchangeConfig } from '../config/exchange.config.js';
import type { OrderType, Side } from '../engine/engine.types.js';
import { formatUnits, parseUnits, PRICE_DECIMALS } from '../engine/money.js';

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
  /**
   * Limit price in ticks (limit orders only), exact: the request's `price` ("99999.9999" or
   * 100.5, > 0, at most 100,000, at most 4 decimals) read by `parseUnits`. Order entry puts it on
   * the `PlaceCommand` as `ticksToWire(priceTicks)`.
   */
  readonly priceTicks?: bigint;
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
/** Largest price, in ticks (100,000 units). */
export const MAX_PRICE_TICKS = 1_000_000_000n;

const show = (v: unknown): string => {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : String(v);
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The price in ticks, or undefined after pushing what is wrong with it (absent for a market order). */
function checkPrice(price: unknown, type: unknown, problems: string[]): bigint | undefined {
  if (type === 'market') {
    if (price !== undefined) problems.push('price must be absent for a market order');
    return undefined;
  }
  if (price === undefined) {
    if (type === undefined || type === 'limit') problems.push('price is required for a limit order');
    return undefined;
  }
  if (typeof price !== 'number' && typeof price !== 'string') {
    problems.push(`price must be a decimal string or a number; got ${show(price)}`);
    return undefined;
  }
  const ticks = parseUnits(price);
  if (ticks === undefined) problems.push(`price must be a decimal with at most ${PRICE_DECIMALS} decimal places, e.g. "99999.9999"; got ${show(price)}`);
  else if (ticks <= 0n) problems.push(`price must be positive; got ${show(price)}`);
  else if (ticks > MAX_PRICE_TICKS) problems.push(`price must be at most ${formatUnits(MAX_PRICE_TICKS)}; got ${show(price)}`);
  else return ticks;
  return undefined;
}

/**
 * Validates an untrusted value (a request body) as an order. Collects every problem rather than
 * stopping at the first; unknown fields are refused. `type` defaults to `limit`. With `listed`,
 * a symbol not in it is refused (so no book opens for a symbol the exchange does not list).
 */
export function validateOrder(input: unknown, listed?: ReadonlySet<string>): OrderValidation {
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
  } else if (symbol !== undefined && listed && !listed.has(symbol)) {
    problems.push(`symbol ${show(symbol)} is not listed on this exchange`);
  }
  if (side !== undefined && side !== 'buy' && side !== 'sell') problems.push(`side must be "buy" or "sell"; got ${show(side)}`);
  if (type !== undefined && type !== 'limit' && type !== 'market') problems.push(`type must be "limit" or "market"; got ${show(type)}`);
  if (qty !== undefined) {
    if (typeof qty !== 'number' || !Number.isInteger(qty)) problems.push(`qty must be a whole number; got ${show(qty)}`);
    else if (qty <= 0) problems.push(`qty must be positive; got ${qty}`);
    else if (qty > MAX_QTY) problems.push(`qty must be at most ${MAX_QTY}; got ${qty}`);
  }
  const priceTicks = checkPrice(price, type, problems);
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
      ...(priceTicks === undefined ? {} : { priceTicks }),
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
 * `invalid order: side must be "buy" or "sell"; got "hold"`. Symbols are checked against the
 * listed ones of the injected `ExchangeConfig`.
 */
@Injectable()
export class OrderValidationPipe implements PipeTransform<unknown, OrderInput> {
  private readonly listed: ReadonlySet<string>;

  constructor(@Inject(EXCHANGE_CONFIG) config: ExchangeConfig) {
    this.listed = new Set(config.symbols);
  }

  /** Validates the body. */
  transform(value: unknown): OrderInput {
    const v = validateOrder(value, this.listed);
    if (v.ok) return v.order;
    const body: OrderProblemBody = { statusCode: 400, error: 'Bad Request', message: `invalid order: ${v.problems.join('; ')}`, problems: v.problems };
    throw new BadRequestException(body);
  }
}
