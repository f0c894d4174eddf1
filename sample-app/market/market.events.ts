/**
 * The market-data events on the Bus besides trades: depth changes (the books cache follows them)
 * and sealed minute candles, with the retention each topic keeps.
 */
import type { RetentionPolicy } from '@echomq/nestjs';
import type { Candle } from '../store/exchange.store.js';

/** `books.changed`: the symbols of `shard` whose depth its holder has just stored. */
export type DepthChanged = {
  readonly shard: number;
  readonly symbols: readonly string[];
};

/** The cache tag of every books page (`GET /market/books`). */
export const BOOKS_TAG = 'market.books';

/** The cache tag of one symbol's book page (`GET /market/books/:symbol`). */
export const bookTag = (symbol: string): string => `market.book.${symbol}`;

/**
 * The tags a depth change makes stale: the all-books page and each changed symbol's page. A
 * malformed event throws (the cache follower retries it, then dead-letters it).
 */
export function booksTagsOf(e: DepthChanged): string[] {
  if (!Array.isArray(e?.symbols) || !e.symbols.every((s) => typeof s === 'string')) throw new Error('books.changed: symbols must be an array of strings');
  return [BOOKS_TAG, ...e.symbols.map(bookTag)];
}

/** `candles.closed`: one sealed minute candle of one symbol. */
export type SealedCandle = Candle & {
  readonly symbol: string;
  /** Always `1m`. */
  readonly interval: '1m';
  /** When it was sealed, epoch ms. */
  readonly sealedAt: number;
};

/**
 * The trade log: a day in the log, then the archive's default bounds (7 days, at most 64 MiB);
 * replay (`rebuild`, `recent`) reads both. Entries a group has not acknowledged are never cut.
 */
export const TRADES_RETENTION: RetentionPolicy = { maxAgeMs: 86_400_000 };

/** Depth changes are only signals for caches: keep the last 1,000, no archive. */
export const BOOKS_CHANGED_RETENTION: RetentionPolicy = { maxLen: 1000, archive: false };

/** Sealed candles: a week of them, no archive. */
export const CANDLES_CLOSED_RETENTION: RetentionPolicy = { maxAgeMs: 7 * 86_400_000, archive: false };
