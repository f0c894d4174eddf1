import { Cluster } from 'iovalkey';
import { Observable, share, type Subscriber } from 'rxjs';
import { decodePayload, encodePayload } from '../protocol/codec.js';
import type { EchoMqConnection, ValkeyClient } from '../protocol/connection.js';
import { fromReplyError } from '../protocol/errors.js';
import { topicKeys } from '../protocol/keys.js';

/**
 * Fire-and-forget signals of topics: `SPUBLISH` on the topic's sharded channel (plain `PUBLISH`
 * on a cluster client, whose sharded subscriber routing is broken in iovalkey). One dedicated
 * subscriber connection serves every topic; each topic is subscribed once, shared by all its
 * observers, and unsubscribed when the last one leaves. The client re-subscribes after a
 * reconnect. At most once: a signal sent while no one is subscribed is gone.
 */
export class SignalHub {
  private subscriber?: Promise<ValkeyClient>;
  private readonly listeners = new Map<string, Set<Subscriber<unknown>>>();
  private readonly shared = new Map<string, Observable<unknown>>();
  private closed = false;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly maxBytes: number,
  ) {}

  private get sharded(): boolean {
    return !(this.conn.client instanceof Cluster);
  }

  /** Sends one signal; resolves to the number of subscribers that received it (on this shard). */
  async publish(topic: string, payload: unknown): Promise<number> {
    const channel = topicKeys(topic).signal;
    const text = encodePayload(payload, this.maxBytes);
    try {
      const c = this.conn.client;
      return Number(this.sharded ? await c.spublish(channel, text) : await c.publish(channel, text));
    } catch (err) {
      throw fromReplyError(err);
    }
  }

  /** The shared observable of a topic's signals. Bad JSON messages are dropped. */
  observe<T>(topic: string): Observable<T> {
    const channel = topicKeys(topic).signal;
    let obs = this.shared.get(channel);
    if (!obs) {
      obs = new Observable<unknown>((subscriber) => {
        let set = this.listeners.get(channel);
        const first = !set;
        if (!set) this.listeners.set(channel, (set = new Set()));
        set.add(subscriber);
        if (first) void this.subscribe(channel).catch((err: unknown) => subscriber.error(fromReplyError(err)));
        return () => {
          set.delete(subscriber);
          if (set.size === 0 && this.listeners.get(channel) === set) {
            this.listeners.delete(channel);
            void this.unsubscribe(channel);
          }
        };
      }).pipe(share());
      this.shared.set(channel, obs);
    }
    return obs as Observable<T>;
  }

  private client(): Promise<ValkeyClient> {
    if (!this.subscriber) {
      this.subscriber = this.conn.blockingClient().then((c) => {
        const onMessage = (channel: string, message: string): void => this.dispatch(channel, message);
        c.on(this.sharded ? 'smessage' : 'message', onMessage);
        return c;
      });
      // A failed connect is retried by the next subscription.
      this.subscriber.catch(() => (this.subscriber = undefined));
    }
    return this.subscriber;
  }

  private dispatch(channel: string, message: string): void {
    const set = this.listeners.get(channel);
    if (!set) return;
    let value: unknown;
    try {
      value = decodePayload(message);
    } catch {
      return; // not JSON: dropped, never thrown into subscribers
    }
    if (value === undefined) return;
    for (const s of [...set]) s.next(value);
  }

  private async subscribe(channel: string): Promise<void> {
    if (this.closed) throw new Error('EchoMQ bus is closed');
    const c = await this.client();
    if (this.sharded) await c.ssubscribe(channel);
    else await c.subscribe(channel);
  }

  private async unsubscribe(channel: string): Promise<void> {
    if (!this.subscriber || this.closed) return;
    try {
      const c = await this.subscriber;
      if (this.listeners.has(channel)) return; // re-subscribed meanwhile
      if (this.sharded) await c.sunsubscribe(channel);
      else await c.unsubscribe(channel);
    } catch {
      // the connection is gone; nothing is subscribed on it any more
    }
  }

  /** Closes the subscriber connection; observers complete. */
  async close(): Promise<void> {
    this.closed = true;
    const sub = this.subscriber;
    this.subscriber = undefined;
    const all = [...this.listeners.values()].flatMap((set) => [...set]);
    this.listeners.clear();
    for (const s of all) s.complete();
    if (sub) {
      try {
        this.conn.release(await sub);
      } catch {
        // never connected
      }
    }
  }
}
