/** The client factory behind `EchoMqConnection`: client options, building a typed-error client, connecting it. */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'iovalkey';
import { nameClient, typedErrors } from './client-setup.js';
import { InvalidOptionError, ValkeyUnavailableError } from '../errors.js';
import { fromReplyError } from '../reply-errors.js';
import type { ValkeyConnectionOptions } from './connection-options.js';

/** `evictionCheckMs` with its default (10 s); anything but 0 or an integer in 100..3,600,000 is an `InvalidOptionError`. */
export function resolveEvictionCheckMs(v: unknown): number {
  if (v === undefined) return 10_000;
  if (typeof v !== 'number' || !Number.isInteger(v) || (v !== 0 && (v < 100 || v > 3_600_000))) {
    throw new InvalidOptionError(`connection.evictionCheckMs must be 0 or an integer in 100..3600000, got ${String(v)}`);
  }
  return v;
}

/** A client EchoMQ can run scripts and plain commands on. */
export type ValkeyClient = Redis | Cluster;

function redisOptions(o: ValkeyConnectionOptions): RedisOptions {
  const tls = o.tls === true ? {} : o.tls || undefined;
  return {
    username: o.username,
    password: o.password,
    db: o.db,
    tls,
    connectTimeout: o.connectTimeoutMs ?? 5000,
    // A command waits out a short reconnect (offline queue) but never longer than this timeout,
    // and at most two reconnect attempts: then it fails with a typed EMQ_UNAVAILABLE.
    commandTimeout: o.commandTimeoutMs === 0 ? undefined : (o.commandTimeoutMs ?? 10_000),
    lazyConnect: true,
    maxRetriesPerRequest: 2,
    retryStrategy: (times: number) => Math.min(50 * 2 ** times, 2000),
  };
}

/**
 * Opens a client (not yet connected) for the options, named `name` in `CLIENT LIST` when given;
 * every command on it fails with a typed EchoMqError.
 */
export function createClient(o: ValkeyConnectionOptions, name?: string): ValkeyClient {
  const client = buildClient(o, o.autoPipelining ?? false);
  typedErrors(client);
  if (name) void nameClient(client, name);
  // Connection errors surface through the commands that fail (typed EMQ_UNAVAILABLE) and the
  // reconnect loop; the last one is kept so a failed connect can name its real cause.
  client.on('error', (err: Error) => {
    lastErrors.set(client, err);
  });
  return client;
}

const lastErrors = new WeakMap<ValkeyClient, Error>();

function buildClient(o: ValkeyConnectionOptions, autoPipeline: boolean): ValkeyClient {
  if (o.cluster && o.cluster.length > 0) {
    const opts: ClusterOptions = {
      redisOptions: { ...redisOptions(o), lazyConnect: false },
      enableAutoPipelining: autoPipeline,
      enableOfflineQueue: true,
      lazyConnect: true,
    };
    return new Cluster([...o.cluster], opts);
  }
  const base = redisOptions(o);
  if (o.url) {
    if (!/^rediss?:\/\//.test(o.url)) throw new InvalidOptionError(`connection url must start with redis:// or rediss://`);
    return new Redis(o.url, { ...base, enableAutoPipelining: autoPipeline });
  }
  return new Redis({ ...base, host: o.host ?? '127.0.0.1', port: o.port ?? 6379, enableAutoPipelining: autoPipeline });
}

/**
 * Connects a client (stopping it when that fails, unless `keepRetrying`). Refused credentials fail with `AuthenticationError` (EMQ_AUTH), a denied
 * command with `PermissionDeniedError` (EMQ_NOPERM); any other failure with `ValkeyUnavailableError`.
 */
export async function connectClient(client: ValkeyClient, keepRetrying = false): Promise<void> {
  try {
    await client.connect();
  } catch (err) {
    // Stopped, unless the caller wants the client to keep reconnecting in the background.
    if (!keepRetrying) client.disconnect();
    const cause = lastErrors.get(client) ?? (err as Error);
    const typed = fromReplyError(cause);
    if (typed.code === 'EMQ_AUTH' || typed.code === 'EMQ_NOPERM') throw typed;
    throw new ValkeyUnavailableError(`cannot connect to Valkey: ${cause.message}`, cause);
  }
}
