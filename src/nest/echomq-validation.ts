import { resolveCodec } from '../core/codec.js';
import { InvalidOptionError } from '../core/errors.js';
import { assertName } from '../core/keys.js';
import { boolOpt, intIn, keySet, optionPath, refuseNonObject, refuseUnknownKeys, type KeyPlace } from '../core/known-keys.js';
import { validateTelemetryOptions } from '../telemetry/telemetry-options.js';
import type { BootRetryOptions, ValkeyConnectionOptions } from '../core/connection/index.js';
import { resolveBootRetry, resolveEvictionCheckMs } from '../core/connection/index.js';
import type { BusOptions } from '../bus/bus-options.js';
import { resolvePolicy } from '../bus/retention-policy.js';
import { CACHE_HINTS, CACHE_OPTION_KEYS, resolveCacheOptions } from '../cache/cache-options.js';
import { resolveInvalidationRules } from '../follow/cache-follower.js';
import type { FlowBounds } from '../queue/flows/index.js';
import { BUILTIN_DEFAULTS, resolveDefaults } from '../queue/queue-options.js';
import { cacheServiceOptions, type EchoMqCacheOptions, type EchoMqModuleAsyncOptions, type EchoMqModuleOptions, type QueueRegistration, type QueueRegistrationAsync } from './echomq-options.js';

/** The call every path of the module options is named under. */
const ROOT = 'EchoMqModule options';

// keySet<T>: a key added to an option type without being listed here fails to compile.
const MODULE_KEYS = keySet<EchoMqModuleOptions>({
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
});
/** BullMQ's names at the top level, refused with what EchoMQ calls them. */
const MODULE_HINTS: Readonly<Record<string, string>> = {
  defaultJobOptions: 'defaults: { attempts, backoff, … } of every queue',
  prefix: 'not offered: the key grammar is fixed (docs/protocol.md §2)',
};
const CONNECTION_KEYS = keySet<ValkeyConnectionOptions>({
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
});
/** iovalkey's own option names, refused with the EchoMQ option that sets them. */
const CONNECTION_HINTS: Readonly<Record<string, string>> = {
  connectTimeout: 'connectTimeoutMs',
  commandTimeout: 'commandTimeoutMs',
  enableAutoPipelining: 'autoPipelining',
  maxRetriesPerRequest: 'not offered: EchoMQ sets the client (docs/deployment.md)',
};
const EMBEDDED_KEYS: ReadonlySet<string> = new Set(['embedded']);
const CLUSTER_NODE_KEYS: ReadonlySet<string> = new Set(['host', 'port']);
const RETRY_KEYS = keySet<BootRetryOptions>({ maxWaitMs: true, intervalMs: true });
const BUS_KEYS = keySet<BusOptions>({ instance: true, maxPayloadBytes: true, deadCap: true, codec: true, trimIntervalMs: true, defaultRetention: true });
const CACHE_KEYS = keySet<EchoMqCacheOptions>({ ...CACHE_OPTION_KEYS, invalidateOn: true });
type ModuleFlowOptions = NonNullable<EchoMqModuleOptions['flows']>;
const FLOW_KEYS = keySet<ModuleFlowOptions>({
  bounds: true,
  leaseMs: true,
  sweepMs: true,
  outboxBound: true,
  waitReplicas: true,
  waitTimeoutMs: true,
  logger: true,
  onReleased: true,
  relay: true,
});
const BOUNDS_KEYS = keySet<FlowBounds>({ maxDepth: true, maxChildren: true, maxNodes: true });
const FEATURE_KEYS = keySet<QueueRegistration>({ name: true, defaults: true });
const FEATURE_ASYNC_KEYS = keySet<QueueRegistrationAsync>({ name: true, imports: true, inject: true, useFactory: true });
const ASYNC_KEYS = keySet<EchoMqModuleAsyncOptions>({ imports: true, useFactory: true, inject: true, useClass: true, useExisting: true });

/** Checks the keys of the object at `path` of the module options (refused: `unknown EchoMqModule options: <path>.<key>`). */
const keysAt = (o: unknown, known: ReadonlySet<string>, path: string, hints?: KeyPlace['hints']): void => refuseUnknownKeys(o, known, ROOT, { path, hints });

/** An optional integer at `path` in `lo..hi`. */
function optInt(v: unknown, lo: number, hi: number, path: string): void {
  if (v !== undefined) intIn(v, lo, hi, path);
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
 * `connection`: every key is EchoMQ's (iovalkey's own names are refused with a hint), and so are
 * `cluster[i]` and `retryAtBoot`; `tls` is Node's `tls.ConnectionOptions`, handed on unchecked
 * (the line: an object EchoMQ defines is checked key by key, one it passes to Node is not).
 */
function validateConnection(c: unknown): void {
  refuseNonObject(c, ROOT, 'connection');
  if ('embedded' in c) {
    keysAt(c, EMBEDDED_KEYS, 'connection');
    if ((c as { embedded: unknown }).embedded !== true) throw new InvalidOptionError('connection.embedded must be true (or give a url, host/port or cluster)');
    return;
  }
  keysAt(c, CONNECTION_KEYS, 'connection', CONNECTION_HINTS);
  const o = c as ValkeyConnectionOptions;
  if (o.url !== undefined && (typeof o.url !== 'string' || !/^rediss?:\/\/./.test(o.url))) {
    throw new InvalidOptionError(`connection.url must be a redis:// or rediss:// URL, got ${JSON.stringify(o.url)}`);
  }
  for (const k of ['host', 'username', 'password'] as const) {
    if (o[k] !== undefined && typeof o[k] !== 'string') throw new InvalidOptionError(`connection.${k} must be a string`);
  }
  optInt(o.port, 1, 65_535, 'connection.port');
  optInt(o.db, 0, 2_147_483_647, 'connection.db');
  optInt(o.connectTimeoutMs, 1, 3_600_000, 'connection.connectTimeoutMs');
  optInt(o.commandTimeoutMs, 0, 3_600_000, 'connection.commandTimeoutMs');
  boolOpt(o.autoPipelining, 'connection.autoPipelining');
  boolOpt(o.allowEvictingPolicy, 'connection.allowEvictingPolicy');
  resolveEvictionCheckMs(o.evictionCheckMs);
  if (o.tls !== undefined && typeof o.tls !== 'boolean' && (typeof o.tls !== 'object' || o.tls === null)) {
    throw new InvalidOptionError('connection.tls must be true, false or Node TLS options');
  }
  if (o.cluster !== undefined) {
    if (!Array.isArray(o.cluster) || o.cluster.length === 0) throw new InvalidOptionError('connection.cluster must be a non-empty array of { host, port }');
    o.cluster.forEach((n: unknown, i) => {
      const path = optionPath('connection.cluster', i);
      keysAt(n, CLUSTER_NODE_KEYS, path);
      const node = (n ?? {}) as { host?: unknown; port?: unknown };
      if (typeof node.host !== 'string' || node.host === '') throw new InvalidOptionError(`${path}.host must be a host name or address`);
      intIn(node.port, 1, 65_535, `${path}.port`);
    });
  }
  if (typeof o.retryAtBoot === 'object') keysAt(o.retryAtBoot, RETRY_KEYS, 'connection.retryAtBoot');
  resolveBootRetry(o.retryAtBoot);
}

/** `flows`: its keys, `bounds`' keys, and the relay's numbers. */
function validateFlows(f: unknown): void {
  keysAt(f, FLOW_KEYS, 'flows');
  const o = f as ModuleFlowOptions;
  if (o.bounds !== undefined) {
    keysAt(o.bounds, BOUNDS_KEYS, 'flows.bounds');
    for (const k of BOUNDS_KEYS) optInt(o.bounds[k as keyof FlowBounds], 1, 1_000_000, `flows.bounds.${k}`);
  }
  optInt(o.leaseMs, 1, 3_600_000, 'flows.leaseMs');
  optInt(o.sweepMs, 1, 3_600_000, 'flows.sweepMs');
  optInt(o.outboxBound, 1, 10_000_000, 'flows.outboxBound');
  optInt(o.waitReplicas, 0, 100, 'flows.waitReplicas');
  optInt(o.waitTimeoutMs, 1, 60_000, 'flows.waitTimeoutMs');
  boolOpt(o.relay, 'flows.relay');
  for (const k of ['logger', 'onReleased'] as const) {
    if (o[k] !== undefined && typeof o[k] !== (k === 'logger' ? 'object' : 'function')) throw new InvalidOptionError(`flows.${k} has the wrong type`);
  }
}

/**
 * Validates module options before any I/O (typed errors, EMQ_BAD_OPTION / EMQ_BAD_NAME): an
 * unknown key at any depth is refused naming its path (`queues.orders.attemps`), values are
 * range-checked (NaN and Infinity included), queue names follow the key grammar, and the
 * embedded default is refused in production.
 */
export function validateModuleOptions(o: EchoMqModuleOptions): EchoMqModuleOptions {
  refuseUnknownKeys(o, MODULE_KEYS, ROOT, { hints: MODULE_HINTS });
  if (o.connection !== undefined) validateConnection(o.connection);
  const defaults = resolveDefaults(BUILTIN_DEFAULTS, o.defaults, ROOT, 'defaults');
  if (o.queues !== undefined) {
    refuseNonObject(o.queues, ROOT, 'queues');
    for (const [name, over] of Object.entries(o.queues)) {
      assertName(name, 'queue');
      resolveDefaults(defaults, over, ROOT, optionPath('queues', name));
    }
  }
  if (o.cache !== undefined) {
    keysAt(o.cache, CACHE_KEYS, 'cache', CACHE_HINTS);
    resolveInvalidationRules(o.cache.invalidateOn, resolveCacheOptions(cacheServiceOptions(o.cache)).namespace);
  }
  if (o.bus !== undefined) {
    keysAt(o.bus, BUS_KEYS, 'bus');
    if (o.bus.instance !== undefined) assertName(o.bus.instance, 'instance'); // as consumerName checks it (EMQ_BAD_NAME)
    optInt(o.bus.maxPayloadBytes, 1, 536_870_912, 'bus.maxPayloadBytes');
    optInt(o.bus.deadCap, 1, 100_000_000, 'bus.deadCap');
    resolveCodec(o.bus.codec, 'bus.codec');
    optInt(o.bus.trimIntervalMs, 0, 86_400_000, 'bus.trimIntervalMs');
    if (o.bus.defaultRetention !== undefined) resolvePolicy(o.bus.defaultRetention, 'EchoMqModule options: bus.defaultRetention');
  }
  if (o.flows !== undefined) validateFlows(o.flows);
  optInt(o.shutdownTimeoutMs, 0, 3_600_000, 'shutdownTimeoutMs');
  boolOpt(o.consumers, 'consumers');
  boolOpt(o.warnUnknownQueues, 'warnUnknownQueues');
  boolOpt(o.scheduler, 'scheduler');
  if (o.telemetry !== undefined) validateTelemetryOptions(o.telemetry);
  refuseEmbeddedInProduction(o);
  return o;
}

/** Refuses unknown keys of `forRootAsync`'s own options (`injects`, `useFactroy`): EMQ_BAD_OPTION. */
export function validateAsyncOptions(a: EchoMqModuleAsyncOptions): void {
  refuseUnknownKeys(a, ASYNC_KEYS, 'forRootAsync options');
}

/**
 * Validates one `forFeature` entry (number `i`): its keys, its name (EMQ_BAD_NAME) and its
 * defaults, each refusal naming its path (`[0].defaults.attemps`); `what` names the call
 * (`forFeatureAsync` checks its factories' results here too).
 */
export function validateRegistration(r: QueueRegistration, i = 0, what = 'forFeature queue options'): void {
  refuseUnknownKeys(r, FEATURE_KEYS, what, { path: `[${i}]` });
  assertName(r.name, 'queue');
  resolveDefaults(BUILTIN_DEFAULTS, r.defaults, what, `[${i}].defaults`);
}

/**
 * Validates one `forFeatureAsync` entry (number `i`) as the module is defined: its keys, its name
 * and its factory (the factory's result is validated when it resolves, by `validateRegistration`).
 */
export function validateAsyncRegistration(r: QueueRegistrationAsync, i: number): void {
  const what = 'forFeatureAsync queue options';
  refuseUnknownKeys(r, FEATURE_ASYNC_KEYS, what, { path: `[${i}]` });
  assertName(r.name, 'queue');
  if (typeof r.useFactory !== 'function') throw new InvalidOptionError(`${what}: [${i}].useFactory must be a function returning the queue's defaults`);
  if (r.inject !== undefined && !Array.isArray(r.inject)) throw new InvalidOptionError(`${what}: [${i}].inject must be an array of tokens`);
}
