/**
 * Deterministic names: the shard of a symbol and the job ids of a trade's settlement flow. A
 * flow created twice with the same ids is created once (docs/flows.md), so a book holder that
 * replays its last batch after a crash, or a stalled holder that overlaps its successor, cannot
 * settle a trade twice.
 */
import type { Trade } from './engine.types.js';

/** How many shards (book holders) the symbols are spread over. */
export const SHARDS = 4;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** The id epoch of EchoMQ's snowflakes (docs/protocol.md §1): 2025-01-01T00:00:00Z. */
const ID_EPOCH_MS = 1735689600000;

/** FNV-1a (32-bit) of a string: stable across processes and runs. */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The shard that matches `symbol`. */
export const shardOf = (symbol: string): number => fnv1a(symbol) % SHARDS;

/** A 64-bit value as an EchoMQ job id: `job` + 11 base62 digits. */
function jobId(value: bigint): string {
  const out = new Array<string>(11);
  let v = value;
  for (let i = 10; i >= 0; i--) {
    out[i] = BASE62[Number(v % 62n)];
    v /= 62n;
  }
  return `job${out.join('')}`;
}

/**
 * The instant (epoch ms) an EchoMQ-minted id was minted: its top bits (docs/protocol.md §1);
 * undefined for anything else (a business id). Order entry stamps a place command with the mint
 * time of its order id (`acceptedAt`), so every enqueue of one order — a retry of the same
 * request days later included — carries the same acceptance time, and the engine's 1 h horizon
 * refuses a late repeat instead of matching the order twice.
 */
export function mintedAt(id: string): number | undefined {
  if (!/^job[0-9A-Za-z]{11}$/.test(id)) return undefined;
  let v = 0n;
  for (const c of id.slice(3)) v = v * 62n + BigInt(BASE62.indexOf(c));
  return Number(v >> 22n) + ID_EPOCH_MS;
}


/** Which job of a trade's settlement flow. */
export type SettlementRole = 'settle' | 'buy' | 'sell';
const ROLE: Readonly<Record<SettlementRole, bigint>> = { settle: 0n, buy: 1n, sell: 2n };

/**
 * A snowflake-shaped id for one job of a trade's settlement: the millisecond is the trade's
 * (so `createdAt` reads as the trade time), and the 22 node/sequence bits hold the shard (3),
 * the role (2) and the trade number modulo 2^17. Two trades get the same id only if one shard
 * made 131,072 trades out of commands stamped with the same millisecond: a millisecond of the
 * log holds the ≤ 1000 commands of one publish call, and each command makes at most
 * MAX_FILLS_PER_ORDER (100) trades, so at most 100,000.
 */
export function settlementJobId(trade: Pick<Trade, 'at' | 'shard' | 'tradeSeq'>, role: SettlementRole): string {
  const ms = BigInt(trade.at - ID_EPOCH_MS);
  const low = (BigInt(trade.shard) << 19n) | (ROLE[role] << 17n) | BigInt(trade.tradeSeq & 0x1ffff);
  return jobId((ms << 22n) | low);
}
