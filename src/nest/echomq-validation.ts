import { InvalidOptionError } from '../core/errors.js';
import { assertName } from '../core/keys.js';
import { validateTelemetryOptions } from '../telemetry/telemetry-options.js';
import type { ValkeyConnectionOptions } from '../core/connection/index.js';
import { resolveBootRetry } from '../core/connection/index.js';
import type { BusOptions } from '../bus/bus-options.js';
import { resolveCacheOptions } from '../cache/cache-options.js';
import { resolveInvalidationRules } from '../follow/cache-follower.js';
import { BUILTIN_DEFAULTS, resolveDefaults } from '../queue/queue-options.js';
import { cacheServiceOptions, type EchoMqModuleOptions, type QueueRegistration } from './echomq-options.js';

// Records over `keyof`: a key added to an option type without being listed here fails to compile.
const MODULE_KEYS: Record<keyof EchoMqModuleOptions, true> = {
  connection: true,
  defaults: true,
  queues: true,
  cache: true,
  bus: true,
  shutdownTimeoutMs: true,
  flows: true,
  consumers: true,
  warnUnknownQueues: true,
  scheduler: true,
  telemetry: true,
};
const CONNECTION_KEYS: Record<keyof ValkeyConnectionOptions, true> = {
  url: true,
  host: true,
  port: true,
  username: true,
  password: true,
  db: true,
  tls: true,
  cluster: true,
  connectTimeoutMs: true,
  commandTimeoutMs: true,
  autoPipelining: true,
  allowEvictingPolicy: true,
  evictionCheckMs: true,
  retryAtBoot: true,
};
const BUS_KEYS: Record<keyof BusOptions, true> = { instance: true, maxPayloadBytes: true, deadCap: true, trimIntervalMs: true };
const FLOW_KEYS: Record<keyof NonNullable<EchoMqModuleOptions['flows']>, true> = {
  bounds: true,
  leaseMs: true,
  sweepMs: true,
  outboxBound: true,
  waitReplicas: true,
  waitTimeoutMs: true,
  logger: true,
  onReleased: true,
  relay: true,
};
const FEATURE_KEYS: Record<keyof QueueRegistration, true> = { name: true, defaults: true };

/** Refuses a value that is not a plain object, or that has keys outside `known`. */
function knownKeys(o: unknown, known: object, what: string): void {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new InvalidOptionError(`${what} must be an object`);
  const unknown = Object.keys(o).filter((k) => !Object.hasOwn(known, k));
  if (unknown.length > 0) throw new InvalidOptionError(`unknown ${what}: ${unknown.join(', ')} (known: ${Object.keys(known).join(', ')})`);
}

function bool(v: unknown, what: string): void {
  if (v !== undefined && typeof v !== 'boolean') throw new InvalidOptionError(`${what} must be a boolean`);
}

/**
 * True when the options ask for the embedded throwaway `valkey-server`: no connection, a
 * connection whose every value is undefined (`{ url: process.env.ECHOMQ_URL }` with it unset), or
 * `{ embedded: true }`.
 */
export function wantsEmbedded(o: EchoMqModuleOptions): boolean {
  const c = o.connection;
  return c === undefined || 'embedded' in c || Object.values(c).every((v) => v === undefined);
}

/**
 * Refuses the embedded default under `NODE_ENV=production` with EMQ_BAD_OPTION, saying how to
 * configure a real Valkey.
 */
export function refuseEmbeddedInProduction(o: EchoMqModuleOptions, env: NodeJS.ProcessEnv = process.env): void {
  if (!wantsEmbedded(o) || env.NODE_ENV !== 'production') return;
  const why = o.connection && 'embedded' in o.connection ? 'connection: { embedded: true } is set' : 'no connection is configured';
  throw new InvalidOptionError(
    `EchoMqModule: ${why} and NODE_ENV=production: the embedded throwaway valkey-server is for development and tests only ` +
      `(no persistence). Configure your Valkey, e.g. EchoMqModule.forRoot({ connection: { url: process.env.ECHOMQ_URL } }) ` +
      `(or host/port, tls, cluster: see docs/nest.md and docs/deployment.md)`,
  );
}

/**
 * Validates module options before any I/O (typed errors, EMQ_BAD_OPTION / EMQ_BAD_NAME): unknown
 * keys at the top level and in `connection`, `bus` and `cache` are refused, values are range-checked,
 * queue names follow the key grammar, and the embedded default is refused in production.
 */
export function validateModuleOptions(o: EchoMqModuleOptions): EchoMqModuleOptions {
  knownKeys(o, MODULE_KEYS, 'EchoMqModule options');
  if (o.connection !== undefined) {
    if ('embedded' in o.connection) {
      knownKeys(o.connection, { embedded: true }, 'embedded connection options');
      if (o.connection.embedded !== true) throw new InvalidOptionError('connection.embedded must be true (or give a url, host/port or cluster)');
    } else {
      knownKeys(o.connection, CONNECTION_KEYS, 'connection options');
      resolveBootRetry(o.connection.retryAtBoot);
      const { url } = o.connection;
      if (url !== undefined && (typeof url !== 'string' || !/^rediss?:\/\/./.test(url))) {
        throw new InvalidOptionError(`connection.url must be a redis:// or rediss:// URL, got ${JSON.stringify(url)}`);
      }
    }
  }
  const defaults = resolveDefaults(BUILTIN_DEFAULTS, o.defaults);
  if (o.queues !== undefined) {
    if (typeof o.queues !== 'object' || o.queues === null || Array.isArray(o.queues)) throw new InvalidOptionError('queues must be an object');
    for (const [name, over] of Object.entries(o.queues)) {
      assertName(name, 'queue');
      resolveDefaults(defaults, over);
    }
  }
  if (o.cache !== undefined) resolveInvalidationRules(o.cache.invalidateOn, resolveCacheOptions(cacheServiceOptions(o.cache)).namespace);
  if (o.bus !== undefined) knownKeys(o.bus, BUS_KEYS, 'bus options');
  if (o.flows !== undefined) {
    knownKeys(o.flows, FLOW_KEYS, 'flows options');
    bool(o.flows.relay, 'flows.relay');
  }
  const t = o.shutdownTimeoutMs;
  if (t !== undefined && (typeof t !== 'number' || !Number.isInteger(t) || t < 0 || t > 3_600_000)) {
    throw new InvalidOptionError(`shutdownTimeoutMs must be an integer in 0..3600000, got ${String(t)}`);
  }
  bool(o.consumers, 'consumers');
  bool(o.warnUnknownQueues, 'warnUnknownQueues');
  bool(o.scheduler, 'scheduler');
  if (o.telemetry !== undefined) validateTelemetryOptions(o.telemetry);
  refuseEmbeddedInProduction(o);
  return o;
}

/** Validates one `forFeature` entry: its keys, its name (EMQ_BAD_NAME) and its defaults. */
export function validateRegistration(r: QueueRegistration): void {
  knownKeys(r, FEATURE_KEYS, 'forFeature queue options');
  assertName(r.name, 'queue');
  resolveDefaults(BUILTIN_DEFAULTS, r.defaults);
}
