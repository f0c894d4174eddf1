import { Cluster } from 'iovalkey';
import type { EchoMqConnection, ValkeyClient } from '../../core/connection/index.js';
import type { TopicKeys } from '../../core/keys.js';
import { waitAtMost } from '../../core/wait-at-most.js';
import type { AckBuffer } from './acks.js';
import { knownServerId, readGroup, readGroupUnblockable, type GroupEntry } from './group-wire.js';

/** How long `stop` waits for an unblocked read's reply. */
const STOP_WAIT_MS = 1000;

/**
 * The read side of a group member: `XREADGROUP` on a dedicated blocking connection, each read
 * preceded on that connection by the queued acknowledgements (see `AckBuffer`) and raced against
 * a watchdog. A read that hangs past its BLOCK loses its connection; the next read opens another
 * (an open that fails throws, and the loop simply tries again after its back-off), so no failure
 * leaves the member holding a dead connection. `stop` ends a back-off sleep at once, and a
 * blocking read by `CLIENT UNBLOCK` first: entries the server delivered just before are then
 * answered and handled, not left pending for a member that is gone (reclaimed only later).
 */
export class GroupReader {
  private blocker?: ValkeyClient;
  private interrupt?: () => void;
  private stopped = false;
  /** The blocking read in flight, and its connection's server id (once known). */
  private reading?: Promise<unknown>;
  private blockedId?: number;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly k: TopicKeys,
    private readonly group: string,
    private readonly consumer: string,
    private readonly acks: AckBuffer,
    private readonly hangMs: number,
  ) {}

  /** Opens the blocking connection (at start, so a member that cannot connect does not start). */
  async open(): Promise<void> {
    await this.client();
  }

  /** Reads up to `count` entries after `from` (`>`: new ones, with BLOCK `blockMs`). */
  read(count: number, from: string, blockMs?: number): Promise<GroupEntry[]> {
    return this.watchdog(this.send(count, from, blockMs), (blockMs ?? 0) + this.hangMs);
  }

  /** Sleeps `ms`, or until `stop`. */
  nap(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.interrupt = undefined;
        resolve();
      }, ms);
      this.interrupt = () => {
        clearTimeout(timer);
        this.interrupt = undefined;
        resolve();
      };
    });
  }

  /**
   * Ends the current read or sleep and closes the blocking connection. A blocking read is
   * unblocked and its reply awaited (up to 1 s) first, so the entries it answers reach the loop;
   * where `CLIENT UNBLOCK` is refused (ACL) or fails, the connection is closed as it is.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    const reading = this.reading;
    const id = this.blockedId;
    // The id must still be the connection's: after a reconnect it names another client (or none).
    if (reading && id !== undefined && this.blocker && knownServerId(this.blocker) === id) {
      // Unblocked (answered nil) or served just before (answered entries): either way the
      // reply is on its way. Refused (ACL) or failed: nothing to wait for.
      const sent = await this.conn.unblock(id, this.k.log).then(() => true, () => false);
      if (sent) await waitAtMost(reading, STOP_WAIT_MS);
    }
    this.interrupt?.();
    this.drop();
  }

  private async client(): Promise<ValkeyClient> {
    if (this.blocker) return this.blocker;
    const c = await this.conn.blockingClient();
    if (this.stopped) {
      this.conn.release(c);
      throw new Error('stopped');
    }
    this.blocker = c;
    return c;
  }

  private drop(): void {
    const b = this.blocker;
    this.blocker = undefined;
    if (b) this.conn.release(b);
  }

  private async send(count: number, from: string, blockMs?: number): Promise<GroupEntry[]> {
    const client = await this.client();
    await this.acks.settled();
    // Cluster clients read plainly (their pipelines route by key; `CLIENT ID` has none): a stop
    // there closes the connection as it is, and a stranded entry waits for a reclaim.
    if (client instanceof Cluster) {
      void this.acks.flush(client);
      return readGroup(client, this.k, this.group, this.consumer, count, from, blockMs);
    }
    // The queued XACK and the read leave in one socket write: corked, the two commands (written
    // synchronously, in this order) go out together on uncork. A write is a system call, and at
    // concurrency 1 it is one per event (about a third of the member's client time, measured).
    const socket = client.status === 'ready' ? client.stream : undefined;
    socket?.cork();
    let read: Promise<GroupEntry[]>;
    try {
      void this.acks.flush(client);
      if (blockMs === undefined) read = readGroup(client, this.k, this.group, this.consumer, count, from);
      else {
        this.blockedId = undefined;
        read = readGroupUnblockable(client, this.k, this.group, this.consumer, count, from, blockMs, (id) => (this.blockedId = id));
      }
    } finally {
      socket?.uncork();
    }
    if (blockMs === undefined) return read;
    this.reading = read;
    try {
      return await read;
    } finally {
      if (this.reading === read) this.reading = this.blockedId = undefined;
    }
  }

  /** Races a read against a timer; no reaction outlives the read. */
  private watchdog<T>(p: Promise<T>, ms: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        this.interrupt = undefined;
      };
      const timer = setTimeout(() => {
        done();
        p.catch(() => undefined);
        this.drop();
        reject(new Error('blocking read hung past its BLOCK'));
      }, ms);
      this.interrupt = () => {
        done();
        p.catch(() => undefined);
        reject(new Error('stopped'));
      };
      p.then(
        (v) => {
          done();
          resolve(v);
        },
        (err: unknown) => {
          done();
          reject(err);
        },
      );
    });
  }
}
