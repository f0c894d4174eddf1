/**
 * The exchange's configuration: the symbols it lists, its accounts with their API keys and
 * opening balances, and its risk switches. Read once at start from `EXCHANGE_CONFIG` (a JSON
 * file, shape `ExchangeConfigFile`) or built from defaults; both are checked here, so the rest of
 * the app reads typed, validated values.
 *
 * API keys: an account's key is given in the file, or derived as `k_` + HMAC-SHA256(secret,
 * account) (hex, 32 chars) from `EXCHANGE_SECRET` (default `dev-secret`, with a warning): the load
 * script and the tests derive the same keys from the same secret.
 */
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseUnits } from '../engine/money.js';

/** One account: who it is, how it authenticates, what it starts with. */
export interface AccountConfig {
  readonly id: string;
  /** The `x-api-key` that acts for this account. */
  readonly apiKey: string;
  /** Opening cash, in ticks. */
  readonly cashTicks: bigint;
  /** Opening units per symbol. */
  readonly units: Readonly<Record<string, bigint>>;
}

/** The validated configuration. */
export interface ExchangeConfig {
  /** Listed symbols; an order for any other is refused (400). */
  readonly symbols: readonly string[];
  /** Accounts by id. */
  readonly accounts: ReadonlyMap<string, AccountConfig>;
  /** The key of the operator (GET /metrics, /admin/queues). */
  readonly adminKey: string;
  /** Let cash go below zero (no buying-power check). Default false. */
  readonly allowNegativeCash: boolean;
  /** Let units go below zero (short selling). Default false. */
  readonly allowShort: boolean;
  /** The price a market buy reserves cash at (its collar), in ticks. Default 100,000.0000 units. */
  readonly marketBuyCollarTicks: bigint;
}

/** The JSON file's shape (amounts in units, as decimal strings or numbers). */
export interface ExchangeConfigFile {
  readonly symbols?: string[];
  readonly accounts?: { id: string; apiKey?: string; cash?: string | number; units?: Record<string, string | number> }[];
  readonly adminKey?: string;
  readonly allowNegativeCash?: boolean;
  readonly allowShort?: boolean;
  readonly marketBuyCollar?: string | number;
}

/** The symbols listed by default: the tests' and the load script's (`ACO`…`ZCO`). */
export const DEFAULT_SYMBOLS: readonly string[] = [
  'ACME', 'BOLT', 'CRUX', 'DUNE', 'EPIC', 'FLUX', 'COH', 'FRZ', 'ZZZ',
  ...Array.from({ length: 26 }, (_, i) => `${String.fromCharCode(65 + i)}CO`),
];

/** Default accounts: the demo's, the load script's `acc0`…`acc9`, and two `whale-*` with deep pockets. */
const DEFAULT_ACCOUNTS: readonly { id: string; cash: bigint; units: bigint }[] = [
  ...['alice', 'bob', 'carol', 'dave'].map((id) => ({ id, cash: 10_000_000n, units: 100_000n })),
  ...Array.from({ length: 10 }, (_, i) => ({ id: `acc${i}`, cash: 10_000_000n, units: 100_000n })),
  ...['whale-a', 'whale-b'].map((id) => ({ id, cash: 10_000_000_000_000n, units: 20_000_000n })),
];

const ACCOUNT_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$/;
const SYMBOL_RE = /^[A-Z][A-Z0-9.]{0,11}$/;
const KEY_RE = /^[\x21-\x7e]{16,128}$/;

/** The API key derived for `account` from `secret`. */
export function deriveApiKey(secret: string, account: string): string {
  return `k_${createHmac('sha256', secret).update(account).digest('hex').slice(0, 32)}`;
}

/** The admin key derived from `secret`. */
export const deriveAdminKey = (secret: string): string => deriveApiKey(secret, ':admin');

/** Reads and checks the configuration; throws an Error listing every problem. */
export function loadExchangeConfig(env: NodeJS.ProcessEnv = process.env): ExchangeConfig {
  const secret = env.EXCHANGE_SECRET?.trim() || 'dev-secret';
  const file = env.EXCHANGE_CONFIG?.trim();
  const raw: ExchangeConfigFile = file ? (JSON.parse(readFileSync(file, 'utf8')) as ExchangeConfigFile) : {};
  return buildExchangeConfig(raw, secret);
}

/** Checks `raw` and fills in the defaults, deriving missing keys from `secret`. */
export function buildExchangeConfig(raw: ExchangeConfigFile, secret: string): ExchangeConfig {
  const problems: string[] = [];
  const symbols = raw.symbols ?? [...DEFAULT_SYMBOLS];
  for (const s of symbols) if (typeof s !== 'string' || !SYMBOL_RE.test(s)) problems.push(`symbol ${JSON.stringify(s)} is not [A-Z][A-Z0-9.]{0,11}`);
  const accounts = new Map<string, AccountConfig>();
  const unitsFor = (v: bigint): Record<string, bigint> => Object.fromEntries(symbols.map((s) => [s, v]));
  const given: NonNullable<ExchangeConfigFile['accounts']> = raw.accounts ?? DEFAULT_ACCOUNTS.map((a) => ({ id: a.id, cash: `${a.cash}`, units: Object.fromEntries(symbols.map((s) => [s, `${a.units}`])) }));
  for (const a of given) {
    if (typeof a?.id !== 'string' || !ACCOUNT_RE.test(a.id)) {
      problems.push(`account id ${JSON.stringify(a?.id)} is not [A-Za-z0-9][A-Za-z0-9_.-]{0,31}`);
      continue;
    }
    const apiKey = a.apiKey ?? deriveApiKey(secret, a.id);
    if (!KEY_RE.test(apiKey)) problems.push(`account ${a.id}: apiKey must be 16..128 printable characters`);
    const cashTicks = parseUnits(a.cash ?? 0);
    if (cashTicks === undefined || cashTicks < 0n) problems.push(`account ${a.id}: cash must be a non-negative amount with at most 4 decimals`);
    const units: Record<string, bigint> = { ...unitsFor(0n) };
    for (const [sym, v] of Object.entries(a.units ?? {})) {
      const n = typeof v === 'number' || typeof v === 'string' ? String(v) : '';
      if (!symbols.includes(sym)) problems.push(`account ${a.id}: units of unlisted symbol ${JSON.stringify(sym)}`);
      else if (!/^\d{1,15}$/.test(n)) problems.push(`account ${a.id}: units of ${sym} must be a whole number ≥ 0`);
      else units[sym] = BigInt(n);
    }
    if (accounts.has(a.id)) problems.push(`account ${a.id} is listed twice`);
    accounts.set(a.id, { id: a.id, apiKey, cashTicks: cashTicks ?? 0n, units });
  }
  const keys = new Set<string>();
  for (const a of accounts.values()) {
    if (keys.has(a.apiKey)) problems.push(`account ${a.id}: apiKey is shared with another account`);
    keys.add(a.apiKey);
  }
  const collar = parseUnits(raw.marketBuyCollar ?? '100000');
  if (collar === undefined || collar <= 0n) problems.push('marketBuyCollar must be a positive amount');
  if (problems.length > 0) throw new Error(`bad exchange configuration:\n  ${problems.join('\n  ')}`);
  return {
    symbols,
    accounts,
    adminKey: raw.adminKey ?? deriveAdminKey(secret),
    allowNegativeCash: raw.allowNegativeCash === true,
    allowShort: raw.allowShort === true,
    marketBuyCollarTicks: collar ?? 0n,
  };
}

/** The injection token of the `ExchangeConfig`. */
export const EXCHANGE_CONFIG = Symbol('EXCHANGE_CONFIG');
