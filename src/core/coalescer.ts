import { EchoMqError } from './errors.js';

/**
 * One script call's worth of items sent for many callers: `send` receives the items of several
 * concurrent requests (in request order) and resolves to one reply entry per item.
 */
export type BatchSend<I, R> = (items: readonly I[]) => Promise<readonly R[]>;

interface Request<I, R> {
  readonly items: readonly I[];
  resolve(replies: R[]): void;
  reject(err: unknown): void;
}

/** Refusals that name one item of a call: a merged call refused so is re-sent request by request. */
const ITEM_CODES = new Set(['EMQ_BAD_ARG', 'EMQ_BAD_ID', 'EMQ_PAYLOAD_TOO_LARGE', 'EMQ_BATCH_TOO_LARGE']);

/**
 * Merges concurrent requests to one destination (one queue, one topic) into one script call, up
 * to `maxItems` items: group commit. Nothing waits on a timer: a request made when nothing is out
 * is sent at once; one made while calls are out goes on the next turn of the event loop when
 * fewer than `maxInFlight` calls are out, else as soon as one returns, together with everything
 * that queued meanwhile. Once `eagerItems` items wait and a call slot is free they go at once,
 * without waiting for the turn to end: a reply that releases many callers, who enqueue again in
 * the same turn, then feeds Valkey a call while the client still makes the rest (pipelining,
 * rather than one large call built while the server idles). So an idle caller pays nothing, and
 * under load the round trips per item fall with the load. Each request is atomic as before (a
 * script call is all-or-nothing, and requests are never split); a merged call refused for one
 * item's sake is retried request by request, so each caller gets its own answer.
 */
export class Coalescer<I, R> {
  private readonly waiting: Request<I, R>[] = [];
  private inFlight = 0;
  private scheduled = false;
  /** Items in `waiting`. */
  private queued = 0;

  /**
   * `maxInFlight` and `eagerItems` default to 4 and 25, measured on single enqueues from 100
   * concurrent callers (CPU profile, then `bench:ab` in docs/benchmarks-ab.md): with 2 calls out
   * and no eager send the client sat idle half the time; 4 and 25 kept it and Valkey both busy,
   * and 8 calls out only added per-call cost.
   */
  constructor(
    private readonly send: BatchSend<I, R>,
    private readonly maxItems: number,
    private readonly maxInFlight = 4,
    private readonly eagerItems = 25,
  ) {}

  /** Sends `items` (at most `maxItems`) in the next call; resolves to their reply entries, in order. */
  submit(items: readonly I[]): Promise<R[]> {
    return new Promise<R[]>((resolve, reject) => {
      this.waiting.push({ items, resolve, reject });
      this.queued += items.length;
      if (this.queued >= this.eagerItems && this.inFlight < this.maxInFlight) return this.flush();
      // Nothing out and nothing waiting: this request goes now (an idle caller's latency gets no
      // turn of the event loop added); requests made meanwhile gather for the next call.
      if (this.inFlight === 0 && this.waiting.length === 1 && !this.scheduled) this.flush();
      else this.schedule();
    });
  }

  /** Requests not yet sent, and calls out. */
  get idle(): boolean {
    return this.waiting.length === 0 && this.inFlight === 0;
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.waiting.length > 0 && this.inFlight < this.maxInFlight) {
      const batch: Request<I, R>[] = [];
      let n = 0;
      while (this.waiting.length > 0 && (batch.length === 0 || n + this.waiting[0].items.length <= this.maxItems)) {
        const r = this.waiting.shift() as Request<I, R>;
        this.queued -= r.items.length;
        batch.push(r);
        n += r.items.length;
      }
      void this.run(batch);
    }
  }

  private async run(batch: Request<I, R>[]): Promise<void> {
    this.inFlight++;
    try {
      if (batch.length === 1) await this.settle(batch[0]);
      else {
        try {
          const replies = await this.send(batch.flatMap((r) => r.items));
          let at = 0;
          for (const r of batch) {
            r.resolve(replies.slice(at, at + r.items.length));
            at += r.items.length;
          }
        } catch (err) {
          if (!(err instanceof EchoMqError && ITEM_CODES.has(err.code))) for (const r of batch) r.reject(err);
          else await Promise.all(batch.map((r) => this.settle(r)));
        }
      }
    } finally {
      this.inFlight--;
      if (this.waiting.length > 0) this.schedule();
    }
  }

  private async settle(r: Request<I, R>): Promise<void> {
    try {
      r.resolve([...(await this.send(r.items))]);
    } catch (err) {
      r.reject(err);
    }
  }
}

/** One `Coalescer` per destination (queue, topic), made on first use from `sendFor(key)`. */
export class CoalescerPool<I, R> {
  private readonly coalescers = new Map<string, Coalescer<I, R>>();

  constructor(
    private readonly sendFor: (key: string) => BatchSend<I, R>,
    private readonly maxItems: number,
  ) {}

  /** Sends `items` to `key` in its next call (see `Coalescer.submit`). */
  submit(key: string, items: readonly I[]): Promise<R[]> {
    let c = this.coalescers.get(key);
    if (!c) {
      c = new Coalescer(this.sendFor(key), this.maxItems);
      this.coalescers.set(key, c);
    }
    return c.submit(items);
  }
}
