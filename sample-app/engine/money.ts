/**
 * Exact money. Prices and amounts are integer ticks (1 tick = 0.0001 of the quote currency) held
 * as `bigint` in memory, as decimal strings of ticks in payloads (job, Bus, store), and as decimal
 * strings of units in the HTTP API (`"1099998898900.0011"`). No JS `number` ever holds a sum of
 * money, so nothing rounds: 11 trades of 999,999 × 99,999.9999 are −10999988989000011 ticks,
 * shown as "-1099998898900.0011".
 */

/** Ticks per unit of price (4 decimal places). */
export const TICKS_PER_UNIT = 10_000n;
/** Decimal places of a price in units. */
export const PRICE_DECIMALS = 4;

const UNITS_RE = /^(-)?(\d{1,15})(?:\.(\d{1,4}))?$/;

/**
 * A price or amount in units — a decimal string (`"99999.9999"`) or a number with at most 4
 * decimals (`100.5`) — as ticks; undefined when it is not one (more decimals, exponent, NaN…).
 * Numbers are read through their shortest decimal form, so `0.1` is exactly 1000 ticks.
 */
export function parseUnits(value: unknown): bigint | undefined {
  const text = typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : typeof value === 'string' ? value.trim() : '';
  const m = UNITS_RE.exec(text);
  if (!m) return undefined;
  const ticks = BigInt(m[2]) * TICKS_PER_UNIT + BigInt((m[3] ?? '').padEnd(PRICE_DECIMALS, '0'));
  return m[1] ? -ticks : ticks;
}

/** Ticks as a decimal string of units with exactly 4 decimals: 1000000n → "100.0000". */
export function formatUnits(ticks: bigint): string {
  const neg = ticks < 0n;
  const abs = neg ? -ticks : ticks;
  const whole = abs / TICKS_PER_UNIT;
  const frac = (abs % TICKS_PER_UNIT).toString().padStart(PRICE_DECIMALS, '0');
  return `${neg ? '-' : ''}${whole}.${frac}`;
}

/** Ticks as the decimal string carried in payloads and passed to Lua (exact at any size). */
export const ticksToWire = (ticks: bigint): string => ticks.toString();

/** The payload form back to ticks; throws on anything but an optional `-` and digits. */
export function ticksFromWire(text: string): bigint {
  if (!/^-?\d{1,30}$/.test(text)) throw new Error(`not an integer amount of ticks: ${JSON.stringify(text)}`);
  return BigInt(text);
}

/** price × quantity, exact. */
export const notional = (priceTicks: bigint, qty: bigint | number): bigint => priceTicks * BigInt(qty);

/** The average price of `notionalTicks` over `qty` units, rounded half away from zero to a tick. */
export function averagePrice(notionalTicks: bigint, qty: bigint | number): bigint {
  const q = BigInt(qty);
  if (q === 0n) return 0n;
  const neg = notionalTicks < 0n;
  const abs = neg ? -notionalTicks : notionalTicks;
  const avg = (abs * 2n + q) / (2n * q);
  return neg ? -avg : avg;
}
