import { call, type ScriptClient } from '../core/scripts.js';
import { readEntriesCall, readEntryCall, type EntryRead, type L2Read } from './cache-wire.js';

/**
 * Most entries one `cache-get` call reads (2 keys each). A turn with more reads sends them as
 * several calls pipelined on the one connection, the first as soon as it fills: while Valkey
 * runs one chunk's script the client is already encoding the next and parsing the previous
 * reply, where one call of 100+ entries leaves the client idle for the whole script run. 32 was
 * the fastest of 12–256 on 100 concurrent L2 hits (≈1.3× the rate of 256, docs/benchmarks.md).
 */
export const READ_BATCH_MAX = 32;

interface Waiting extends EntryRead {
  readonly resolve: (value: L2Read) => void;
  readonly reject: (reason: unknown) => void;
}

/**
 * Coalesces the L2 reads issued in one turn of the event loop (concurrent `get`s with a cold L1)
 * into one `cache-get.lua` call of N entries: the first read of a turn schedules a flush on
 * `process.nextTick`, which runs once the turn's promise continuations have drained, so
 * concurrent callers share one command, one script run and one reply. Each caller still gets
 * its own read or its own typed error: when the batched call fails (an entry that is not a
 * hash fails the whole call), its entries are read again one by one (the script writes
 * nothing, so a re-read is harmless). A NOSCRIPT is re-sent by EVAL, as `call` does.
 * Only for a standalone client: on a cluster the entries of one call would span nodes.
 */
export class ReadBatch {
  private queue: Waiting[] = [];
  private scheduled = false;

  constructor(
    private readonly client: ScriptClient,
    private readonly max: number = READ_BATCH_MAX,
  ) {}

  /** Reads `r` in the current turn's call. */
  read(r: EntryRead): Promise<L2Read> {
    return new Promise<L2Read>((resolve, reject) => {
      this.queue.push({ k: r.k, key: r.key, withLease: r.withLease, resolve, reject });
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
    call(this.client, readEntriesCall(batch)).then(
      (reads) => {
        for (let i = 0; i < batch.length; i++) batch[i].resolve(reads[i]);
      },
      (err: unknown) => {
        if (batch.length === 1) batch[0].reject(err);
        else for (const w of batch) call(this.client, readEntryCall(w.k, w.key, w.withLease)).then(w.resolve, w.reject);
      },
    );
  }
}
