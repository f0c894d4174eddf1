import { QueueAdmin } from '../admin/queue-admin.js';
import { connectClient, EchoMqConnection } from '../core/connection/index.js';
import { EchoMqError, ValkeyUnavailableError } from '../core/errors.js';
import { QueueService } from '../queue/queue-service.js';
import { BusAdmin } from '../admin/bus-admin.js';
import { CacheAdmin } from '../admin/cache-admin.js';
import { BusService } from '../bus/bus-service.js';
import { CacheService } from '../cache/cache-service.js';
import { Output } from './output.js';

/** The default Valkey URL when neither `--url` nor `VALKEY_URL` is given. */
export const DEFAULT_URL = 'redis://127.0.0.1:6379';

/** The admin services a command uses. */
export interface AdminServices {
  /** The Queue's operator surface. */
  readonly queues: QueueAdmin;
  /** The Bus's operator surface. */
  readonly bus: BusAdmin;
  /** The Cache's operator surface. */
  readonly cache: CacheAdmin;
}

/**
 * What a command runs against: one connection (connected on first use) and the admin services
 * over it. Reading needs read permissions only: the connection takes no node lease and writes
 * nothing (`+@read` and a few connection commands suffice: docs/deployment.md, "A monitoring
 * user"). The lease is taken on first use, when a command mints an id (a cache invalidation's
 * version): the first `ids.ready()` opens it (`EchoMqConnection.openOnFirstUse`).
 */
export class CliContext {
  private conn?: EchoMqConnection;
  private services?: AdminServices;
  private bus?: BusService;
  private cache?: CacheService;

  constructor(
    readonly url: string,
    readonly out: Output,
  ) {}

  /** Connects (a wrong URL fails here, as EMQ_UNAVAILABLE) and returns the admin services; no node lease until an id is minted. */
  async admin(): Promise<AdminServices> {
    if (this.services) return this.services;
    const conn = new EchoMqConnection({ url: this.url, connectTimeoutMs: 2000, commandTimeoutMs: 5000 });
    conn.logger = { warn: () => undefined };
    try {
      await connectClient(conn.client);
    } catch (err) {
      conn.client.disconnect();
      if (err instanceof EchoMqError && err.code !== 'EMQ_UNAVAILABLE') throw err;
      const why = err instanceof Error ? err.message : String(err);
      throw new ValkeyUnavailableError(`cannot reach Valkey at ${this.url}: ${why.replace(/^cannot connect to Valkey: /, '')}`, err);
    }
    // Connected already, so the rest of the open (eviction-policy check, node lease, names) waits
    // for the first id minted, not for the first command: reads never lease.
    conn.openOnFirstUse();
    this.conn = conn;
    // Retention warnings (an unbounded topic, a default applied) go to stderr, never into --json output.
    const warn = (m: string): void => void process.stderr.write(`echomq: warning: ${m}\n`);
    this.bus = new BusService(conn, { trimIntervalMs: 0 }, undefined, { warn, error: warn });
    this.cache = new CacheService(conn);
    this.services = { queues: new QueueAdmin(conn, new QueueService(conn)), bus: new BusAdmin(conn, this.bus), cache: new CacheAdmin(conn, this.cache) };
    return this.services;
  }

  /** The open connection (opened as `admin()` opens it). */
  async connection(): Promise<EchoMqConnection> {
    await this.admin();
    return this.conn!;
  }

  /** Closes the connection, if it was opened. */
  async close(): Promise<void> {
    await this.cache?.close();
    await this.bus?.close();
    await this.conn?.close();
  }
}
