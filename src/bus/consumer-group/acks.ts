import type { ValkeyClient } from '../../core/connection/index.js';

/** Sends one `XACK` of `ids` on `client`. */
export type AckSender = (client: ValkeyClient, ids: string[]) => Promise<unknown>;

/**
 * The acknowledgements of one group member: queued by finished handlers, sent in batches of at
 * most 1000 ids per `XACK`. A send that fails puts its ids back for the next one. The loop sends
 * the queued ids on its own connection right before each read or claim (one connection keeps
 * them in order, so the server sees every earlier ack before the read), and waits for sends in
 * flight on other connections first: so a member never holds more than `concurrency` pending
 * entries, and an entry whose handler finished before a read is never re-run after a crash.
 */
export class AckBuffer {
  private ids: string[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private queued = false;

  constructor(
    private readonly client: ValkeyClient,
    private readonly send: AckSender,
    private readonly onFail: (err: unknown) => void,
  ) {}

  /** Ids waiting to be sent. */
  get size(): number {
    return this.ids.length;
  }

  /** Queues one id; `later` leaves the send to the caller's next read (no flush of its own). */
  push(id: string, later: boolean): void {
    this.ids.push(id);
    if (!later) this.schedule();
  }

  /** Sends the queued ids in the next turn of the event loop (once per turn). */
  schedule(): void {
    if (this.queued || this.ids.length === 0) return;
    this.queued = true;
    setImmediate(() => {
      this.queued = false;
      void this.flush();
    });
  }

  /**
   * Sends every queued id on `client` (default: the command connection). The commands are
   * written before this returns its promise, so a command issued next on the same client is
   * ordered after them. Resolves when they settled; never rejects.
   */
  flush(client: ValkeyClient = this.client): Promise<void> {
    const sends: Promise<void>[] = [];
    while (this.ids.length > 0) {
      const ids = this.ids.splice(0, 1000);
      const p = this.send(client, ids).then(
        () => undefined,
        (err: unknown) => {
          this.ids.unshift(...ids);
          this.onFail(err);
        },
      );
      const tracked = p.finally(() => this.inFlight.delete(tracked));
      this.inFlight.add(tracked);
      sends.push(tracked);
    }
    return Promise.all(sends).then(() => undefined);
  }

  /** Resolves when every send in flight settled (at once when none is). */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }
}
