import type { Json } from '../core/codec.js';

/** One event of a topic's log, as `BusService.replay` hands it out (a group handler gets a `BusEvent`). */
export interface ReplayedEvent<T = Json> {
  /** The branded event id (`evt…`), convertible to the stream id with `streamIdOf`. */
  readonly id: string;
  /** The topic it was published to. */
  readonly topic: string;
  /** The decoded payload. */
  readonly payload: T;
  /** The mint instant (server clock, ms precision). */
  readonly at: Date;
}

/**
 * A topic's retention policy, stored in its meta hash (docs/bus.md, "Retention and the archive").
 * An absent log bound is none; an absent archive bound gets its default (7 days, 64 MiB) unless
 * `unbounded: true`.
 */
export interface RetentionPolicy {
  /** Keep at most this many entries in the live log (older ones move to the archive). */
  readonly maxLen?: number;
  /** Move entries older than this (ms) to the archive. */
  readonly maxAgeMs?: number;
  /** Delete archive segments whose newest entry is older than this (ms). Default 7 days; `Infinity`: no age bound. */
  readonly archiveMaxAgeMs?: number;
  /**
   * Delete the oldest archive segments while the archive holds more than this many bytes (its
   * segments' total length). Default 64 MiB; `0`: no archive (trimmed entries are deleted);
   * `Infinity`: no byte bound (a warning is logged).
   */
  readonly archiveMaxBytes?: number;
  /** `false`: no archive, trimmed entries are deleted (as `archiveMaxBytes: 0`). */
  readonly archive?: boolean;
  /** `true`: an absent archive bound is no bound instead of its default (a warning is logged once per topic). */
  readonly unbounded?: boolean;
}

/** The outcome of `BusService.trim`. */
export interface TrimResult {
  /** Entries copied into archive segments. */
  readonly archived: number;
  /** Entries removed from the live log. */
  readonly trimmed: number;
  /** Archive segments deleted by `archiveMaxAgeMs` or `archiveMaxBytes`. */
  readonly expiredSegments: number;
}

/** Options of `BusService.replay`. */
export interface ReplayOptions {
  /** First event (inclusive): a branded event id, or an instant (every event minted at or after it). Default: the oldest retained. */
  readonly from?: string | Date;
  /** Last event (inclusive): a branded event id, or an instant (every event minted at or before its ms). Default: now. */
  readonly to?: string | Date;
  /** `asc` = mint order (default), `desc` = newest first. */
  readonly order?: 'asc' | 'desc';
  /** Entries read per round trip (1..1000). Default 200. */
  readonly batch?: number;
}

/** One dead letter of a topic (written by the consumer-group loop). */
export interface DeadLetter<T = Json> {
  /** The branded id of the dead event. */
  readonly id: string;
  /** The stream id of the dead-letter entry itself. */
  readonly deadId: string;
  /** The consumer group that gave up on it. */
  readonly group: string;
  /** The member that dead-lettered it. */
  readonly consumer: string;
  /** How many times the group delivered it. */
  readonly deliveries: number;
  /** The last handler error. */
  readonly error: string;
  /** The payload, or undefined when it is missing or not JSON. */
  readonly payload: T | undefined;
  /** When it was dead-lettered. */
  readonly at: Date;
}
