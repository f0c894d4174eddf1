import { Cluster } from 'iovalkey';
import type { Writable } from 'node:stream';
import type { ValkeyClient } from '../../core/connection/index.js';

/** One reply per command of a batch, in order: its error or its value (as a pipeline answers). */
export type BatchReplies = [Error | null, unknown][];

/** A reply callback: the command's error, or its value. */
export type ReplyCallback = (err: Error | null, reply?: unknown) => void;

/**
 * The commands of one blocking wait (`CLIENT ID`, a claim, `BLPOP`), sent in order on the blocking
 * connection. Each callback runs as its reply arrives (a claim's reply while the `BLPOP` still
 * blocks); `exec` settles once every reply is in and never rejects (a failed command is its
 * error in the replies).
 */
export interface WaitBatch {
  clientId(cb: ReplyCallback): void;
  evalsha(sha: string, keys: readonly string[], args: readonly (string | number)[], cb?: ReplyCallback): void;
  blpop(keys: readonly string[], seconds: number): void;
  exec(): Promise<BatchReplies>;
}

/**
 * A batch for `client`. On a standalone client the commands go one by one on the connection (in
 * order, as a pipeline would send them): a wait is sent for every job at light load, and an
 * iovalkey `Pipeline` a job made the process's young garbage survive its scavenges (13% of it,
 * against 0.7% sent one by one: 4–14 ms pauses against 1–2 ms; docs/bounds.md, "Light load").
 * The connection's socket is corked from the first command to `exec`, so the three go out in one
 * write (one syscall, one read for Valkey) rather than three.
 * On a cluster a pipeline keeps the three on the node of the queue's slot (`CLIENT ID` has no key).
 */
export function waitBatch(client: ValkeyClient): WaitBatch {
  return client instanceof Cluster ? new PipelineBatch(client) : new DirectBatch(client);
}

class DirectBatch implements WaitBatch {
  private readonly sent: Promise<[Error | null, unknown]>[] = [];
  /** The socket corked until `exec` (undefined when not connected: commands then queue offline). */
  private corked?: Writable;

  constructor(private readonly c: Exclude<ValkeyClient, Cluster>) {
    const stream = (c as { stream?: Writable }).stream;
    if (c.status === 'ready' && stream && !stream.destroyed) {
      stream.cork();
      this.corked = stream;
      process.nextTick(() => this.uncork()); // (`exec` uncorks first; this only if it never ran)
    }
  }

  private add(reply: Promise<unknown>, cb?: ReplyCallback): void {
    this.sent.push(
      reply.then(
        (value) => {
          cb?.(null, value);
          return [null, value];
        },
        (err: Error) => {
          cb?.(err);
          return [err, undefined];
        },
      ),
    );
  }

  clientId(cb: ReplyCallback): void {
    this.add(this.c.client('ID'), cb);
  }

  evalsha(sha: string, keys: readonly string[], args: readonly (string | number)[], cb?: ReplyCallback): void {
    this.add(this.c.evalsha(sha, keys.length, ...keys, ...args), cb);
  }

  blpop(keys: readonly string[], seconds: number): void {
    this.add(this.c.blpop(...keys, seconds));
  }

  exec(): Promise<BatchReplies> {
    this.uncork();
    return Promise.all(this.sent);
  }

  private uncork(): void {
    this.corked?.uncork();
    this.corked = undefined;
  }
}

class PipelineBatch implements WaitBatch {
  private readonly p: ReturnType<Cluster['pipeline']>;

  constructor(c: Cluster) {
    this.p = c.pipeline();
  }

  clientId(cb: ReplyCallback): void {
    this.p.client('ID', (err?: Error | null, id?: unknown) => cb(err ?? null, id));
  }

  evalsha(sha: string, keys: readonly string[], args: readonly (string | number)[], cb?: ReplyCallback): void {
    this.p.evalsha(sha, keys.length, ...keys, ...args, (err?: Error | null, reply?: unknown) => cb?.(err ?? null, reply));
  }

  blpop(keys: readonly string[], seconds: number): void {
    this.p.blpop(...keys, seconds);
  }

  exec(): Promise<BatchReplies> {
    return this.p.exec().then(
      (replies) => replies ?? [],
      (err: unknown) => {
        const e = err instanceof Error ? err : new Error(String(err));
        return [[e, undefined], [e, undefined], [e, undefined]];
      },
    );
  }
}
