import { QueueAdmin } from '../admin/queue-admin.js';
import { EchoMqConnection } from '../protocol/connection.js';
import { EchoMqError, ValkeyUnavailableError } from '../protocol/errors.js';
import { QueueService } from '../queue/queue.service.js';
import { Output } from './output.js';

/** The default Valkey URL when neither `--url` nor `VALKEY_URL` is given. */
export const DEFAULT_URL = 'redis://127.0.0.1:6379';

/** The admin services a command uses. */
export interface AdminServices {
  /** The Queue's operator surface. */
  readonly queues: QueueAdmin;
}

/** What a command runs against: one connection (opened on first use) and the admin services over it. */
export class CliContext {
  private conn?: EchoMqConnection;
  private services?: AdminServices;

  constructor(
    readonly url: string,
    readonly out: Output,
  ) {}

  /** Opens the connection (a wrong URL fails here, as EMQ_UNAVAILABLE) and returns the admin services. */
  async admin(): Promise<AdminServices> {
    if (this.services) return this.services;
    const conn = new EchoMqConnection({ url: this.url, connectTimeoutMs: 2000, commandTimeoutMs: 5000 });
    conn.logger = { warn: () => undefined };
    try {
      await conn.open();
    } catch (err) {
      conn.client.disconnect();
      if (err instanceof EchoMqError && err.code !== 'EMQ_UNAVAILABLE') throw err;
      const why = err instanceof Error ? err.message : String(err);
      throw new ValkeyUnavailableError(`cannot reach Valkey at ${this.url}: ${why.replace(/^cannot connect to Valkey: /, '')}`, err);
    }
    this.conn = conn;
    this.services = { queues: new QueueAdmin(conn, new QueueService(conn)) };
    return this.services;
  }

  /** The open connection (opened as `admin()` opens it). */
  async connection(): Promise<EchoMqConnection> {
    await this.admin();
    return this.conn!;
  }

  /** Closes the connection, if it was opened. */
  async close(): Promise<void> {
    await this.conn?.close();
  }
}
