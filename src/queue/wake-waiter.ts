import type { EchoMqConnection, ValkeyClient } from '../protocol/connection.js';

/** What a waiter tells its consumer: the wait ended (woken, or its block ran out), or it failed. */
export interface WaiterEvents {
  woke(): void;
  failed(err: unknown, what: string): void;
}

/** A wait longer than its block by this much is taken for a dead (half-open) connection. */
const HANG_MS = 15_000;

/**
 * An idle consumer's blocking wait on its queue's wake list (`BLPOP` with a finite block), on a
 * dedicated connection. Each wait ends in exactly one event, unless it was superseded (a later
 * wait, `close`): a superseded wait's late reply is ignored. A wait that hangs past its block, or
 * a connection that could not be opened, is replaced by a fresh connection; the reconnect stands
 * in for the wait and ends in an event too, so the waiter never leaves its consumer with nothing
 * armed.
 */
export class WakeWaiter {
  private blocker?: ValkeyClient;
  private gen = 0;
  private since = 0;
  private blockMs = 0;
  private closed = false;
  /** A wait (or the reconnect standing in for one) is in progress. */
  busy = false;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly key: string,
    private readonly events: WaiterEvents,
  ) {}

  /** Opens the blocking connection (at start, so a consumer that cannot connect does not start). */
  async open(): Promise<void> {
    this.blocker = await this.conn.blockingClient();
  }

  /** Blocks up to `ms` on the wake list. */
  wait(ms: number): void {
    if (!this.blocker) return void this.reopen();
    this.busy = true;
    const gen = ++this.gen;
    this.since = Date.now();
    this.blockMs = ms;
    this.blocker.blpop(this.key, ms / 1000).then(
      () => this.end(gen),
      (err: unknown) => this.end(gen, err, 'wait failed: '),
    );
  }

  /** True (and the connection is being replaced) when the current wait outlived its block by 15 s. */
  hung(): boolean {
    if (!this.busy || Date.now() - this.since <= this.blockMs + HANG_MS) return false;
    void this.reopen();
    return true;
  }

  /** Ends every wait and closes the connection. */
  close(): void {
    this.closed = true;
    this.gen++;
    this.drop();
  }

  private end(gen: number, err?: unknown, what = ''): void {
    if (gen !== this.gen || this.closed) return;
    this.busy = false;
    if (err === undefined) this.events.woke();
    else this.events.failed(err, what);
  }

  private drop(): void {
    const b = this.blocker;
    this.blocker = undefined;
    if (b) this.conn.release(b);
  }

  private async reopen(): Promise<void> {
    const gen = ++this.gen;
    this.busy = true;
    this.since = Date.now();
    this.blockMs = 0;
    this.drop();
    try {
      const fresh = await this.conn.blockingClient();
      if (this.closed) this.conn.release(fresh);
      else this.blocker = fresh;
      this.end(gen);
    } catch (err) {
      this.end(gen, err, 'reconnect failed: ');
    }
  }
}
