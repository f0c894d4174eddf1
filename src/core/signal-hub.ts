import { Cluster } from 'iovalkey';
import { Observable, share, type Subscriber } from 'rxjs';
import { decodePayload, encodePayload } from './codec.js';
import type { EchoMqConnection, ValkeyClient } from './connection/index.js';
import { fromReplyError } from './reply-errors.js';
import { keySlot } from './slot.js';

/** How often (ms) a cluster hub checks that every channel is subscribed on its slot's owner. */
export const SIGNAL_FOLLOW_MS = 1000;

/** A cluster redirect: the node asked does not serve the slot (any more). */
const REDIRECT = /^(MOVED|ASK) /;

/** What the hub reads of a subscriber client: its state and the channels it holds (iovalkey's own set). */
interface SubscriberState {
  readonly status: string;
  readonly condition?: { subscriber?: false | { channels(type: string): string[] } } | null;
}

/**
 * Fire-and-forget signals on sharded pub/sub channels (`SPUBLISH` / `SSUBSCRIBE`): Bus topic
 * signals and queue lifecycle events. One dedicated subscriber connection serves every channel
 * (on a cluster: one per primary, opened to the node owning the channel's slot, because
 * iovalkey's cluster client cannot route SSUBSCRIBE); each channel is subscribed once, shared by
 * all its observers, and unsubscribed when the last one leaves. The client re-subscribes after a
 * reconnect. On a cluster the hub also follows slots: when a slot migrates (the old owner drops
 * its channels with a server-sent `sunsubscribe`) or a primary fails over (its connection dies),
 * the channel is subscribed again on the slot's new owner, found by refreshing the slot map —
 * checked on every topology event and every `SIGNAL_FOLLOW_MS`. At most once: a signal sent
 * while no one is subscribed (including during such a move) is gone.
 */
export class SignalHub {
  private readonly subscribers = new Map<string, Promise<ValkeyClient>>();
  /** Subscriber clients that connected, by node (`host:port`, or `''` off a cluster). */
  private readonly opened = new Map<string, ValkeyClient>();
  /** The node each observed channel is subscribed on (or being subscribed on). */
  private readonly placed = new Map<string, string>();
  private readonly listeners = new Map<string, Set<Subscriber<unknown>>>();
  private readonly shared = new Map<string, Observable<unknown>>();
  private closed = false;
  private timer?: NodeJS.Timeout;
  private following = false;

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

  /** The subscriber connection of `node`: the one client, or on a cluster that primary's own. */
  private client(node: string): Promise<ValkeyClient> {
    let sub = this.subscribers.get(node);
    if (!sub) {
      sub = this.open(node).then((c) => {
        c.on('smessage', (ch: string, message: string) => this.dispatch(ch, message));
        // A server-sent sunsubscribe (slot migrated) surfaces as an error of the client; a
        // dead primary as a closed connection: either way, look at the placement again.
        c.on('error', () => this.follow());
        c.on('close', () => this.follow());
        this.opened.set(node, c);
        return c;
      });
      this.subscribers.set(node, sub);
      // A failed connect is retried by the next subscription.
      sub.catch(() => this.subscribers.delete(node));
    }
    return sub;
  }

  /** The node owning `channel`'s slot in the cluster client's slot map (`''` off a cluster). */
  private ownerOf(channel: string): string {
    const c = this.conn.client;
    if (!(c instanceof Cluster)) return '';
    return c.slots[keySlot(channel)]?.[0] ?? '';
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
    const node = this.ownerOf(channel);
    this.placed.set(channel, node);
    try {
      await (await this.client(node)).ssubscribe(channel);
    } catch (err) {
      if (this.placed.get(channel) === node) this.placed.delete(channel);
      // Our slot map was stale (the slot moved since): following subscribes it on the new owner.
      if (!(this.conn.client instanceof Cluster) || !REDIRECT.test(err instanceof Error ? err.message : '')) throw err;
    }
    this.startFollowing();
    if (!this.placed.has(channel)) this.follow();
  }

  private async unsubscribe(channel: string): Promise<void> {
    const node = this.placed.get(channel);
    this.placed.delete(channel);
    const sub = node === undefined ? undefined : this.subscribers.get(node);
    if (!sub || this.closed) return;
    try {
      const c = await sub;
      if (this.listeners.has(channel)) return; // re-subscribed meanwhile
      await c.sunsubscribe(channel);
    } catch {
      // the connection is gone; nothing is subscribed on it any more
    }
  }

  /** On a cluster: checks the placement every SIGNAL_FOLLOW_MS and on every topology change. */
  private startFollowing(): void {
    const c = this.conn.client;
    if (this.timer || this.closed || !(c instanceof Cluster)) return;
    this.timer = setInterval(() => this.follow(), SIGNAL_FOLLOW_MS);
    this.timer.unref();
    for (const e of ['+node', '-node', 'refresh']) c.on(e, this.onTopology);
  }

  private readonly onTopology = (): void => this.follow(false);

  /** The channels certainly subscribed on `node`'s connection right now (none unless it is ready). */
  private held(node: string): ReadonlySet<string> {
    const c = this.opened.get(node) as SubscriberState | undefined;
    const set = c?.status === 'ready' ? c.condition?.subscriber : undefined;
    return new Set(set ? set.channels('ssubscribe') : []);
  }

  /**
   * Moves every observed channel that is not certainly subscribed on its slot's owner there:
   * refreshes the slot map first (when `refresh`), subscribes on the owner, drops the old
   * subscription and closes a node connection left serving nothing. One pass at a time; a failed
   * pass is retried by the next tick.
   */
  private follow(refresh = true): void {
    const c = this.conn.client;
    if (this.following || this.closed || !(c instanceof Cluster)) return;
    const held = new Map<string, ReadonlySet<string>>();
    const holds = (node: string, ch: string): boolean => {
      if (!held.has(node)) held.set(node, this.held(node));
      return held.get(node)!.has(ch);
    };
    const stale = [...this.listeners.keys()].filter((ch) => {
      const at = this.placed.get(ch);
      return at === undefined || at !== this.ownerOf(ch) || !holds(at, ch);
    });
    if (stale.length === 0) return;
    this.following = true;
    const slots = refresh ? new Promise<void>((r) => c.refreshSlotsCache(() => r())) : Promise.resolve();
    void slots
      .then(() => Promise.allSettled(stale.map((ch) => this.move(ch))))
      .then(() => this.dropIdle())
      .finally(() => (this.following = false));
  }

  private async move(channel: string): Promise<void> {
    const from = this.placed.get(channel);
    const to = this.ownerOf(channel);
    if (to === '' || this.closed || !this.listeners.has(channel)) return;
    // Same node, not ready: it is reconnecting, and re-subscribes by itself once back.
    if (from === to && (this.held(to).has(channel) || (this.opened.has(to) && this.opened.get(to)?.status !== 'ready'))) return;
    if (from !== undefined && from !== to) {
      const old = this.opened.get(from);
      if (old?.status === 'ready') await old.sunsubscribe(channel).catch(() => undefined);
    }
    this.placed.set(channel, to);
    await (await this.client(to)).ssubscribe(channel);
  }

  /** Closes node connections no observed channel is placed on (e.g. a failed-over primary's). */
  private dropIdle(): void {
    const used = new Set(this.placed.values());
    for (const [node, c] of this.opened) {
      if (used.has(node)) continue;
      this.opened.delete(node);
      this.subscribers.delete(node);
      this.conn.release(c);
    }
  }

  /** Closes the subscriber connections; observers complete. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    const c = this.conn.client;
    if (c instanceof Cluster) for (const e of ['+node', '-node', 'refresh']) c.off(e, this.onTopology);
    const subs = [...this.subscribers.values()];
    this.subscribers.clear();
    this.opened.clear();
    this.placed.clear();
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
