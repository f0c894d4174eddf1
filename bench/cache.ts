/**
 * The Cache side of the benchmark: the metric names and sizes, and one small client interface
 * that both EchoMQ's `CacheService` and bentocache (memory L1 + redis L2 + redis bus) implement,
 * so every cache phase runs the same code against either system on the same Valkey.
 */
import { BentoCache, bentostore } from 'bentocache';
import { memoryDriver } from 'bentocache/drivers/memory';
import { redisBusDriver, redisDriver } from 'bentocache/drivers/redis';
import { CacheService } from '@echomq/nestjs';
import { EchoMqConnection } from '@echomq/nestjs/protocol';
import { payload100 } from './common.js';

/** The cache metrics written under `"cache"` in `bench/results.json`, in table order. */
export const CACHE_METRICS = [
  'cache_l1_hit_per_s',
  'cache_l2_hit_per_s',
  'cache_get_or_load_per_s',
  'cache_invalidation_lag_p50_ms',
  'cache_invalidation_lag_p99_ms',
] as const;

/** One cache metric name. */
export type CacheMetric = (typeof CACHE_METRICS)[number];

/** The two cache systems compared. */
export const CACHE_SYSTEMS = ['echomq', 'bentocache'] as const;

/** One cache system name. */
export type CacheSystem = (typeof CACHE_SYSTEMS)[number];

/** True for the cache metrics where a smaller number is better. */
export const cacheLowerIsBetter = (m: CacheMetric): boolean => m.includes('lag');

/** How big each cache phase is. */
export interface CacheSizes {
  /** Gets of one hot key already in L1. */
  readonly l1Hits: number;
  /** Distinct keys pre-set by another instance, each read once by a cold instance. */
  readonly l2Hits: number;
  /** Distinct cold keys loaded through `getOrLoad` / `getOrSet`. */
  readonly getOrLoad: number;
  /** Timed set → other-process-sees-it rounds (after 20 untimed ones). */
  readonly lagRounds: number;
}

/** The cache sizes of a full run and of a `--quick` run. */
export function cacheSizes(quick: boolean): CacheSizes {
  return quick ? { l1Hits: 50_000, l2Hits: 5000, getOrLoad: 5000, lagRounds: 50 } : { l1Hits: 200_000, l2Hits: 20_000, getOrLoad: 20_000, lagRounds: 200 };
}

/** Calls in flight in the throughput phases (each batch of this many is awaited before the next). */
export const CACHE_IN_FLIGHT = 100;

/** Time to live of every benchmark entry, both systems (far longer than any phase). */
export const CACHE_TTL_MS = 600_000;

/** L1 bound, both systems: EchoMQ's default `l1MaxEntries` (bentocache's memory driver defaults to 1,000). */
export const L1_MAX_ITEMS = 10_000;

/** The cached value: the 100-byte benchmark payload, as a type alias so it is assignable to `Json`. */
export type BenchPayload = { readonly i: number; readonly pad: string };

/** Payload `i` of the benchmark (exactly 100 bytes of JSON). */
export function cachePayload(i: number): BenchPayload {
  const p = payload100(i);
  return { i: p.i, pad: p.pad };
}

/** What a phase needs from a cache system; values are the 100-byte benchmark payload. */
export interface CacheClient {
  readonly system: CacheSystem;
  /** The value of `key` (L1, else L2), or undefined. */
  get(key: string): Promise<BenchPayload | undefined>;
  /** Writes `value` to L2 and L1 and tells the other instances (EchoMQ announces, bentocache publishes). */
  set(key: string, value: BenchPayload): Promise<void>;
  /** The value of `key`, running `loader` on a miss (EchoMQ `getOrLoad`, bentocache `getOrSet`). */
  getOrLoad(key: string, loader: () => BenchPayload): Promise<BenchPayload>;
  /** Closes every connection of this instance. */
  close(): Promise<void>;
}

/** Where the instances of one phase meet: the Valkey URL and a per-phase namespace / prefix. */
export interface CacheTarget {
  readonly url: string;
  readonly namespace: string;
}

/** Opens one instance of `system` (its own connections and its own, empty, L1). */
export function openCache(system: CacheSystem, target: CacheTarget): Promise<CacheClient> {
  return system === 'echomq' ? openEcho(target) : Promise.resolve(openBento(target));
}

/** EchoMQ: one `EchoMqConnection` and a `CacheService` with its defaults except the TTL. */
async function openEcho(target: CacheTarget): Promise<CacheClient> {
  const conn = new EchoMqConnection({ url: target.url });
  await conn.open();
  const cache = new CacheService(conn, { namespace: target.namespace, ttlMs: CACHE_TTL_MS, l1MaxEntries: L1_MAX_ITEMS });
  return {
    system: 'echomq',
    get: (key) => cache.get<BenchPayload>(key),
    set: (key, value) => cache.set(key, value),
    getOrLoad: (key, loader) => cache.getOrLoad<BenchPayload>(key, loader),
    close: async () => {
      await cache.close();
      await conn.close();
    },
  };
}

/** Host and port of a `redis://host:port` URL, as ioredis options. */
function redisOptions(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || 6379) };
}

/**
 * bentocache: one store with a memory L1 (serialized, as by default; `maxItems` raised to EchoMQ's
 * 10,000), a redis L2 and a redis bus, each on its own ioredis connection(s) to the bench Valkey.
 */
function openBento(target: CacheTarget): CacheClient {
  const connection = redisOptions(target.url);
  const bento = new BentoCache({
    default: 'bench',
    prefix: target.namespace,
    ttl: CACHE_TTL_MS,
    stores: {
      bench: bentostore()
        .useL1Layer(memoryDriver({ maxItems: L1_MAX_ITEMS }))
        .useL2Layer(redisDriver({ connection }))
        .useBus(redisBusDriver({ connection })),
    },
  });
  return {
    system: 'bentocache',
    get: (key) => bento.get<BenchPayload | undefined>({ key }),
    set: async (key, value) => {
      await bento.set({ key, value });
    },
    getOrLoad: (key, loader) => bento.getOrSet<BenchPayload>({ key, factory: loader }),
    close: () => bento.disconnectAll(),
  };
}
