import type { Subscription } from 'rxjs';
import type { EchoMqConnection, ValkeyClient } from '../../core/connection/index.js';
import { describeError } from '../../core/reply-errors.js';
import { flowWire, type OutboxEntry } from '../../core/wire/index.js';
import { queueKeys } from '../../core/keys.js';
import { SignalHub } from '../../core/signal-hub.js';
import type { QueueDefaults } from '../queue-options.js';
import { targetOf, testHold } from './flow-entries.js';
import { ReplicaWait } from './replica-wait.js';
import type { FlowReleaseListener } from '../telemetry-hooks.js';
import { RelayTargets } from './relay-targets.js';

/** How the relay runs. */
export interface FlowRelayOptions {
  /** The settings of a queue (payload limit, morgue cap, cancelled retention). */
  readonly settings: (queue: string) => QueueDefaults;
  /** Relay lease of a taken entry (ms): a crashed relay's entries are due again after it. Default 5000. */
  readonly leaseMs?: number;
  /** How often every watched outbox is swept for entries whose signal was missed or whose lease lapsed (ms). Default 1000. */
  readonly sweepMs?: number;
  /** The most entries an outbox holds before flow-add refuses new flows on its queue. Default 100,000. */
  readonly outboxBound?: number;
  /**
   * Replicas each target write must reach (`WAIT`, on the relay's own connection) before its entry
   * is acknowledged; an entry whose target did not confirm is relayed again after its lease
   * (harmlessly), and after `UNCONFIRMED_LEASES` leases acknowledged anyway and reported
   * (`FlowRelay.unconfirmed`, a warning). Narrows the window in which a failover loses a relayed
   * effect after its entry was acknowledged. Default 0 (off).
   */
  readonly waitReplicas?: number;
  /** How long that `WAIT` may block (ms). Default 100. */
  readonly waitTimeoutMs?: number;
  readonly logger?: { warn(message: string): void };
  /** Told of each parent this relay released (the flow release span, docs/telemetry.md). */
  readonly onReleased?: FlowReleaseListener;
}

/** Concurrent drains per queue. */
const DRAINS = 4;

/** Entries taken per outbox-take call. */
const TAKE = 100;

/** Leases an entry whose target did not confirm its replicas is relayed again before it is acknowledged anyway. */
export const UNCONFIRMED_LEASES = 5;

/**
 * Relays flow hand-offs (docs/flows.md): watches the outbox of each queue it is told about (the
 * sharded channel of the outbox key wakes it; a sweep catches missed signals and lapsed leases),
 * takes due entries under a lease, runs each one's idempotent target script on the target queue
 * (flow-add, flow-deliver, cancel), then acknowledges them. A crash between the target script
 * and the acknowledgement only delays: the entry is taken again by any live relay and its replay
 * changes nothing. Any number of processes may relay the same queues.
 */
export class FlowRelay {
  private readonly watched = new Map<string, Subscription>();
  /** Drains running per queue (each takes its own leased entries). */
  private readonly running = new Map<string, Set<Promise<void>>>();
  /** Acknowledgements in flight (not awaited by the drain: the entries are leased meanwhile). */
  private readonly acks = new Set<Promise<unknown>>();
  private readonly again = new Set<string>();
  /** Creation entries written under the self-relay lease, to be relayed on the next turn. */
  private readonly created = new Map<string, OutboxEntry[]>();
  private readonly hub: SignalHub;
  private readonly targets: RelayTargets;
  private timer?: NodeJS.Timeout;
  private closed = false;
  /** Removes the relay from the process description (`connection.process`), once it relays. */
  private undescribe?: () => void;
  /** With `waitReplicas`: the relay's own client (target scripts and `WAIT` run on it), and its waits. */
  private own?: Promise<ValkeyClient>;
  private ownClient?: ValkeyClient;
  private readonly waits?: ReplicaWait;
  /** Entries (`<queue> <id>`) whose target did not confirm, since when (ms). */
  private readonly unconfirmedSince = new Map<string, number>();
  /** Entries acknowledged without their replicas' confirmation (after `UNCONFIRMED_LEASES` leases); a metric. */
  unconfirmed = 0;
  readonly leaseMs: number;
  readonly outboxBound: number;

  constructor(
    private readonly conn: EchoMqConnection,
    private readonly opts: FlowRelayOptions,
  ) {
    this.hub = new SignalHub(conn, 1024);
    this.leaseMs = opts.leaseMs ?? 5000;
    this.outboxBound = opts.outboxBound ?? 100_000;
    if ((opts.waitReplicas ?? 0) > 0) this.waits = new ReplicaWait(opts.waitReplicas ?? 0, opts.waitTimeoutMs ?? 100);
    this.targets = new RelayTargets(() => this.ownClient ?? this.conn.client, opts, this.outboxBound, {
      selfLease: () => this.selfLease(),
      relayCreated: (q, es) => this.relayCreated(q, es),
      follow: (q) => this.follow(q),
      watch: (q) => this.watch(q),
    });
  }

  /** Relays `queue`'s outbox from now on (idempotent), and drains it once. */
  watch(queue: string): void {
    if (this.closed || this.watched.has(queue)) return;
    this.undescribe ??= this.conn.process.add(() => ({ kind: 'role', role: 'flow-relay' }));
    const k = queueKeys(queue);
    const sub = this.hub.observe<unknown>(k.outbox).subscribe({
      next: () => void this.drain(queue),
      error: (err: unknown) => this.opts.logger?.warn(`flow relay ${queue}: signal lost (${describeError(err)}); sweeping only`),
    });
    this.watched.set(queue, sub);
    if (!this.timer) {
      this.timer = setInterval(() => {
        for (const q of this.watched.keys()) if (!this.running.has(q)) void this.drain(q);
      }, this.opts.sweepMs ?? 1000);
      this.timer.unref();
    }
    void this.drain(queue);
  }

  /**
   * Drains `queue`'s outbox now, in up to `DRAINS` concurrent drains (a signal arriving while they
   * all run makes one of them go round again), so a hand-off never waits behind a whole batch.
   */
  drain(queue: string): Promise<void> {
    if (this.closed) return Promise.resolve();
    let drains = this.running.get(queue);
    if (drains && drains.size >= DRAINS) {
      this.again.add(queue);
      return [...drains][0];
    }
    if (!drains) this.running.set(queue, (drains = new Set()));
    const set = drains;
    let run: Promise<void> | undefined = undefined;
    run = (async () => {
      try {
        do {
          this.again.delete(queue);
          while (!this.closed && (await this.relayBatch(queue)) === TAKE);
        } while (this.again.has(queue) && !this.closed);
      } catch (err) {
        if (!this.closed) this.opts.logger?.warn(`flow relay ${queue}: ${describeError(err)}; retrying on the next sweep`);
      } finally {
        if (run) set.delete(run);
        if (set.size === 0 && this.running.get(queue) === set) this.running.delete(queue);
      }
    })();
    set.add(run);
    return run;
  }

  /** Stops relaying (entries left are relayed by any other live node, or after a restart). */
  async close(): Promise<void> {
    const owed = [...this.created];
    this.created.clear();
    for (const [q, es] of owed) for (let i = 0; i < es.length; i += TAKE) this.relayTaken(q, es.slice(i, i + TAKE));
    this.closed = true;
    this.undescribe?.();
    if (this.timer) clearInterval(this.timer);
    for (const s of this.watched.values()) s.unsubscribe();
    this.watched.clear();
    await Promise.allSettled([...this.running.values()].flatMap((l) => [...l]));
    await Promise.allSettled([...this.acks]);
    await this.hub.close();
    if (this.ownClient) this.conn.release(this.ownClient);
  }

  /**
   * Relays entries this process already holds the lease of (a completion of `queue` that asked for
   * its hand-offs back: complete.lua's self-relay lease), without a signal or a take. A failure only
   * delays: the entries are due to any relay again when the lease lapses.
   */
  relayTaken(queue: string, entries: readonly OutboxEntry[]): void {
    if (this.closed || entries.length === 0) return;
    const run = this.relayEntries(queue, entries).catch((err: unknown) => {
      if (!this.closed) this.opts.logger?.warn(`flow relay ${queue}: ${describeError(err)}; relayed again after the lease`);
    });
    this.acks.add(run);
    void run.finally(() => this.acks.delete(run));
  }

  /**
   * The self-relay lease to ask of a script that writes entries this process relays at once
   * (flow-add's creations, complete's hand-offs); undefined once closed (the entries are then
   * signalled, and relayed by any live relay).
   */
  selfLease(): number | undefined {
    return this.closed ? undefined : this.leaseMs;
  }

  /**
   * Relays creation entries this process wrote under its self-relay lease (`selfLease`): those of
   * one queue written in the same turn go out together on the next turn (one flow-add per target
   * queue for many flows), then are acknowledged.
   */
  relayCreated(queue: string, entries: readonly OutboxEntry[]): void {
    if (this.closed || entries.length === 0) return;
    const had = this.created.size > 0;
    this.created.set(queue, [...(this.created.get(queue) ?? []), ...entries]);
    if (had) return;
    setImmediate(() => {
      const all = [...this.created];
      this.created.clear();
      for (const [q, es] of all) for (let i = 0; i < es.length; i += TAKE) this.relayTaken(q, es.slice(i, i + TAKE));
    });
  }

  /** One take → relay → ack round; resolves to how many entries were taken. */
  private async relayBatch(queue: string): Promise<number> {
    const entries = await flowWire.take(this.conn.scriptClient, queueKeys(queue), TAKE, this.leaseMs);
    if (entries.length > 0) await this.relayEntries(queue, entries);
    return entries.length;
  }

  /** Relays leased entries of `queue`'s outbox, then acknowledges those whose target script ran. */
  private async relayEntries(queue: string, entries: readonly OutboxEntry[]): Promise<void> {
    const k = queueKeys(queue);
    const hold = testHold('before-relay', entries.map((e) => e.id));
    if (hold) await hold;
    if (this.waits) await this.openOwn();
    const settled = await this.targets.relayAll(entries);
    let done = entries.filter((_, i) => settled[i].status === 'fulfilled');
    if (this.waits) done = await this.durable(queue, done);
    settled.forEach((s, i) => {
      if (s.status === 'rejected') this.opts.logger?.warn(`flow relay ${queue}: entry ${entries[i].id} not relayed (${describeError(s.reason)}); retried after its lease`);
    });
    if (done.length > 0) {
      const ids = done.map((e) => e.id);
      const held = testHold('before-ack', ids);
      if (held) await held;
      const ack = flowWire.ack(this.conn.scriptClient, k, ids).catch((err: unknown) => {
        this.opts.logger?.warn(`flow relay ${queue}: acknowledgement failed (${describeError(err)}); the entries are relayed again, harmlessly`);
      });
      this.acks.add(ack);
      void ack.finally(() => this.acks.delete(ack));
    }
  }

  /** Opens the relay's own client (`waitReplicas`): every command to a node behind a `WAIT` waits; none of the app's does. */
  private async openOwn(): Promise<void> {
    this.own ??= this.conn.blockingClient('block').then((c) => (this.ownClient = c));
    try {
      await this.own;
    } catch (err) {
      this.own = undefined;
      throw err;
    }
  }

  /**
   * The relayed entries to acknowledge: those whose target queue's node confirmed `waitReplicas`
   * replicas, and those unconfirmed for `UNCONFIRMED_LEASES` leases (counted and reported: a
   * replica that is missing does not come back by relaying them forever).
   */
  private async durable(queue: string, done: readonly OutboxEntry[]): Promise<OutboxEntry[]> {
    const client = this.ownClient;
    const targets = [...new Set(done.map((e) => targetOf(e.text) ?? ''))];
    const ok = new Map<string, boolean>();
    await Promise.all(targets.map(async (q) => ok.set(q, q === '' || (!!client && !!(await this.waits?.confirm(client, queueKeys(q).meta))))));
    const now = Date.now();
    const out: OutboxEntry[] = [];
    let given = 0;
    for (const e of done) {
      const at = `${queue} ${e.id}`;
      if (ok.get(targetOf(e.text) ?? '')) {
        this.unconfirmedSince.delete(at);
        out.push(e);
        continue;
      }
      const since = this.unconfirmedSince.get(at) ?? now;
      if (now - since >= UNCONFIRMED_LEASES * this.leaseMs) {
        this.unconfirmedSince.delete(at);
        out.push(e);
        given++;
      } else {
        if (this.unconfirmedSince.size >= 100_000) this.unconfirmedSince.delete(this.unconfirmedSince.keys().next().value ?? '');
        this.unconfirmedSince.set(at, since);
      }
    }
    if (given > 0) {
      this.unconfirmed += given;
      this.opts.logger?.warn(`flow relay ${queue}: ${given} entries acknowledged without ${this.opts.waitReplicas ?? 0} replica(s) confirming their target's write, after ${UNCONFIRMED_LEASES} leases (${this.unconfirmed} so far)`);
    }
    return out;
  }

  /** A queue that just received outbox entries: relay them now, and keep watching it. */
  private follow(queue: string): void {
    if (this.watched.has(queue)) void this.drain(queue);
    else this.watch(queue);
  }
}
