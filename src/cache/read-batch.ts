import { callPipeline, type ScriptCall, type ScriptClient } from '../protocol/scripts.js';

/** Most calls one flush sends in one pipeline write. */
export const READ_BATCH_MAX = 256;

interface Waiting {
  readonly call: ScriptCall<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
}

/**
 * Coalesces the script calls issued in one turn of the event loop (L2 reads of concurrent
 * `get`s) into one pipeline write: the first call of a turn schedules a flush on
 * `process.nextTick`, which runs once the turn's promise continuations have drained, so
 * concurrent callers share one write and one read of the socket. Each caller still gets its
 * own reply or its own typed error (a NOSCRIPT is re-sent by EVAL, as `callPipeline` does).
 * Only for a standalone client: a cluster pipeline must stay on one node.
 */
export class ReadBatch {
  private queue: Waiting[] = [];
  private scheduled = false;

  constructor(
    private readonly client: ScriptClient,
    private readonly max: number = READ_BATCH_MAX,
  ) {}

  /** Runs `c` in the current turn's pipeline. */
  run<T>(c: ScriptCall<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ call: c, resolve: resolve as (value: unknown) => void, reject });
      if (this.queue.length >= this.max) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        process.nextTick(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    if (batch.length === 0) return;
    this.queue = [];
    callPipeline(this.client, batch.map((w) => w.call)).then(
      (settled) => {
        for (let i = 0; i < batch.length; i++) {
          const s = settled[i];
          if (s.status === 'fulfilled') batch[i].resolve(s.value);
          else batch[i].reject(s.reason);
        }
      },
      (err: unknown) => {
        for (const w of batch) w.reject(err);
      },
    );
  }
}
