import type { EchoMqConnection, ValkeyClient } from '../protocol/connection.js';
import type { TopicKeys } from '../protocol/keys.js';
import type { AckBuffer } from './group-acks.js';
import { readGroup, type GroupEntry } from './group-wire.js';

/**
 * The read side of a group member: `XREADGROUP` on a dedicated blocking connection, each read
 * preceded on that connection by the queued acknowledgements (see `AckBuffer`) and raced against
 * a watchdog. A read that hangs past its BLOCK loses its connection; the next read opens another
 * (an open that fails throws, and the loop simply tries again after its back-off), so no failure
 * leaves the member holding a dead connection. `stop` ends a read or a back-off sleep at once.
 */
export class GroupReader {
  private blocker?: ValkeyClient;
  private interrupt?: () => void;
  private stopped = false;

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

  /** Ends the current read or sleep and closes the blocking connection. */
  stop(): void {
    this.stopped = true;
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
    void this.acks.flush(client);
    return readGroup(client, this.k, this.group, this.consumer, count, from, blockMs);
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
