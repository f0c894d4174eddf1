import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { InvalidOptionError } from '../../core/errors.js';
import { assertName, MAX_NAME_LENGTH } from '../../core/keys.js';
import type { ConsumerLogger } from '../../core/logger.js';
import type { BusTracer } from '../bus-tracer.js';

/** Where a new group starts reading: the whole log, new entries only, or from an instant. */
export type GroupStart = 'start' | 'now' | Date;

/** Options of one consumer group (`@OnEvent(topic, options)`). */
export interface OnEventOptions {
  /** The group name (key grammar). Every process using the same name shares the work. */
  readonly group: string;
  /** Handlers running at once in this process (1..1000). Default 1. */
  readonly concurrency?: number;
  /** Most deliveries of one entry (1..1000) before it is dead-lettered. Default 5. */
  readonly maxDeliveries?: number;
  /** An entry pending longer than this (ms, 100..86,400,000) is reclaimed. Default 30,000. */
  readonly ackTimeoutMs?: number;
  /** Where the group starts when it is created (an existing group keeps its place). Default 'start'. */
  readonly from?: GroupStart;
  /**
   * Read-ahead (0..1000): entries this member may read and hold pending beyond the `concurrency`
   * that run, so one `XREADGROUP` fetches up to `concurrency + prefetch` entries and their acks
   * leave in one `XACK` per batch. Default 0: a member never holds more than `concurrency`
   * pending entries. Relaxes that bound (a crash delays and re-delivers up to
   * `concurrency + prefetch` entries): see docs/bus.md "Read-ahead".
   */
  readonly prefetch?: number;
}

/** The options with every default applied. */
export interface ResolvedGroupOptions {
  readonly group: string;
  readonly concurrency: number;
  readonly maxDeliveries: number;
  readonly ackTimeoutMs: number;
  readonly from: GroupStart;
  readonly prefetch: number;
}

/** One event as a group handler receives it. */
export interface BusEvent<T = unknown> {
  /** The branded event id (`evt…`, see `eventIdOf`). */
  readonly id: string;
  /** The topic it was published to. */
  readonly topic: string;
  /** The decoded payload. */
  readonly payload: T;
  /** The instant the entry was appended (server clock). */
  readonly at: Date;
  /** The server's delivery count of this entry in this group, this delivery included. */
  readonly deliveries: number;
  /** Aborted when the handler must give up (shutdown past its deadline). */
  readonly signal: AbortSignal;
}

/** A group handler; resolving acknowledges the event, throwing leaves it pending for a retry. */
export type EventHandler<T = unknown> = (event: BusEvent<T>) => Promise<void>;

const KNOWN = new Set(['group', 'concurrency', 'maxDeliveries', 'ackTimeoutMs', 'from', 'prefetch']);

/** `v` when it is an integer in [lo, hi]; else throws `InvalidOptionError` naming `what`. */
export const intIn = (v: unknown, lo: number, hi: number, what: string): number => {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) {
    throw new InvalidOptionError(`${what} must be an integer in ${lo}..${hi}, got ${String(v)}`);
  }
  return v;
};

/**
 * Validates group options (unknown keys are refused) and applies the defaults. Throws
 * `InvalidNameError` for a bad group name and `InvalidOptionError` for anything else.
 */
export function resolveGroupOptions(o: OnEventOptions): ResolvedGroupOptions {
  if (!o || typeof o !== 'object') throw new InvalidOptionError('group options must be an object with a group name');
  const unknown = Object.keys(o).filter((k) => !KNOWN.has(k));
  if (unknown.length > 0) throw new InvalidOptionError(`unknown group options: ${unknown.join(', ')}`);
  assertName(o.group, 'group');
  const from = o.from ?? 'start';
  if (from !== 'start' && from !== 'now' && !(from instanceof Date && Number.isFinite(from.getTime()) && from.getTime() >= 0)) {
    throw new InvalidOptionError(`from must be 'start', 'now' or a valid Date`);
  }
  return {
    group: o.group,
    concurrency: o.concurrency === undefined ? 1 : intIn(o.concurrency, 1, 1000, 'concurrency'),
    maxDeliveries: o.maxDeliveries === undefined ? 5 : intIn(o.maxDeliveries, 1, 1000, 'maxDeliveries'),
    ackTimeoutMs: o.ackTimeoutMs === undefined ? 30_000 : intIn(o.ackTimeoutMs, 100, 86_400_000, 'ackTimeoutMs'),
    from,
    prefetch: o.prefetch === undefined ? 0 : intIn(o.prefetch, 0, 1000, 'prefetch'),
  };
}

/** The `XGROUP CREATE` start id of a `from` option. */
export function startId(from: GroupStart): string {
  if (from === 'start') return '0';
  if (from === 'now') return '$';
  return `${from.getTime()}-0`;
}

/**
 * The consumer name of a group member. With an instance (the given one, else `ECHOMQ_INSTANCE`)
 * it is `<hostname>-<instance>`, stable across restarts: the caller promises that no two live
 * processes share it, and a restart under it re-reads its own pending entries. Without one it
 * is unique per member: `<hostname>-<pid>-<8 random hex digits>`, so processes on one host never
 * share a pending list (a restarted process's old entries are reclaimed by the live members and
 * the gone member is removed from the group). Characters of the host name outside the grammar
 * become `_`, and it is shortened so the name fits 100 characters.
 */
export function consumerName(instance?: string): string {
  const inst = instance ?? process.env.ECHOMQ_INSTANCE;
  if (inst !== undefined) assertName(inst, 'instance');
  const suffix = inst ?? `${process.pid}-${randomBytes(4).toString('hex')}`;
  const host = hostname().replace(/[^A-Za-z0-9_.-]/g, '_') || 'host';
  const name = `${host.slice(0, Math.max(0, MAX_NAME_LENGTH - suffix.length - 1))}-${suffix}`;
  assertName(name, 'consumer');
  return name;
}

/** Everything a group loop needs. */
export interface GroupConsumerConfig {
  readonly topic: string;
  readonly options: OnEventOptions;
  readonly handler: EventHandler<unknown>;
  /** Stable instance part of the consumer name (default `ECHOMQ_INSTANCE`; unset: a unique name, see `consumerName`). */
  readonly instance?: string;
  /** The whole consumer name, overriding `consumerName` (tests run two members in one process). */
  readonly consumer?: string;
  /** Dead-letter log cap (1..1,000,000). Default 10,000. */
  readonly deadCap?: number;
  /** Longest XREADGROUP BLOCK (ms). Default 5000. */
  readonly blockMs?: number;
  /** How long past its BLOCK a read may hang before its connection is replaced (ms). Default 10,000. */
  readonly hangMs?: number;
  /** Another member with no pending entries and idle this long (ms, 100..86,400,000) is removed from the group. Default max(ackTimeoutMs, 60,000). */
  readonly forgetIdleMs?: number;
  readonly logger?: ConsumerLogger;
  /** Handle spans, children of each event's traceparent (docs/telemetry.md). */
  readonly tracer?: BusTracer;
}
