import { Cluster } from 'iovalkey';
import { Observable, share, type Subscriber } from 'rxjs';
import { decodePayload, encodePayload } from './codec.js';
import type { EchoMqConnection, ValkeyClient } from './connection.js';
import { fromReplyError } from './errors.js';
import { keySlot } from './slot.js';

/**
 * Fire-and-forget signals on sharded pub/sub channels (`SPUBLISH` / `SSUBSCRIBE`): Bus topic
 * signals and queue lifecycle events. One dedicated subscriber connection serves every channel
 * (on a cluster: one per primary, opened to the node owning the channel's slot, because
 * iovalkey's cluster client cannot route SSUBSCRIBE); each channel is subscribed once, shared by
 * all its observers, and unsubscribed when the last one leaves. The client re-subscribes after a
 * reconnect. At most once: a signal sent while no one is subscribed is gone.
 */
export class SignalHub {
  private readonly subscribers = new Map<string, Promise<ValkeyClient>>();
  private readonly listeners = new Map<string, Set<Subscriber<unknown>>>();
  private readonly shared = new Map<string, Observable<unknown>>();
  private closed = false;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly maxBytes: number,
  ) {}

  /** Sends one signal; resolves to the number of subscribers that received it (on this shard). */
  async publish(channel: string, payload: unknown): Promise<number> {
    const text = encodePayload(payload, this.maxBytes);
    try {
      return Number(await this.conn.client.spublish(channel, text));
    } catch (err) {
      throw fromReplyError(err);
    }
  }

  /** The shared observable of a channel's signals. Bad JSON messages are dropped. */
  observe<T>(channel: string): Observable<T> {
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

  /** The subscriber connection for `channel`: the one client, or on a cluster the slot owner's. */
  private client(channel: string): Promise<ValkeyClient> {
    const node = this.ownerOf(channel);
    let sub = this.subscribers.get(node);
    if (!sub) {
      sub = this.open(node).then((c) => {
        c.on('smessage', (ch: string, message: string) => this.dispatch(ch, message));
        return c;
      });
      this.subscribers.set(node, sub);
      // A failed connect is retried by the next subscription.
      sub.catch(() => this.subscribers.delete(node));
    }
    return sub;
  }

  private ownerOf(channel: string): string {
    const c = this.conn.client;
    if (!(c instanceof Cluster)) return '';
    const slots = (c as unknown as { slots: string[][] }).slots;
    return slots[keySlot(channel)]?.[0] ?? '';
  }

  private open(node: string): Promise<ValkeyClient> {
    if (node === '') return this.conn.blockingClient('sub');
    const colon = node.lastIndexOf(':');
    return this.conn.nodeClient(node.slice(0, colon), Number(node.slice(colon + 1)));
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
    if (this.closed) throw new Error('EchoMQ signals are closed');
    await (await this.client(channel)).ssubscribe(channel);
  }

  private async unsubscribe(channel: string): Promise<void> {
    const sub = this.subscribers.get(this.ownerOf(channel));
    if (!sub || this.closed) return;
    try {
      const c = await sub;
      if (this.listeners.has(channel)) return; // re-subscribed meanwhile
      await c.sunsubscribe(channel);
    } catch {
      // the connection is gone; nothing is subscribed on it any more
    }
  }

  /** Closes the subscriber connection; observers complete. */
  async close(): Promise<void> {
    this.closed = true;
    const subs = [...this.subscribers.values()];
    this.subscribers.clear();
    const all = [...this.listeners.values()].flatMap((set) => [...set]);
    this.listeners.clear();
    for (const s of all) s.complete();
    for (const sub of subs) {
      try {
        this.conn.release(await sub);
      } catch {
        // never connected
      }
    }
  }
}
