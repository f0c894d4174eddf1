import { hostname } from 'node:os';

/** The EchoMQ release this runtime is (kept equal to package.json's `version`; a test checks it). */
export const ECHOMQ_VERSION = '0.1.0';

/** The largest description node.lua accepts, in bytes (docs/protocol.md §1, "Process descriptions"). */
export const MAX_PROCESS_INFO_BYTES = 8192;

/** One thing a process runs, as its description lists it (read when the lease renews). */
export type ProcessPart =
  | { readonly kind: 'queue'; readonly queue: string; readonly concurrency: number; readonly active: number }
  | { readonly kind: 'group'; readonly topic: string; readonly group: string; readonly consumer: string; readonly concurrency: number }
  | { readonly kind: 'role'; readonly role: string };

/** A queue consumer in a process description. */
export interface ProcessQueue {
  /** The queue's name. */
  readonly name: string;
  /** Its handlers' concurrency. */
  readonly concurrency: number;
  /** Jobs its handlers ran when the description was written. */
  readonly active: number;
}

/** A Bus consumer-group member in a process description. */
export interface ProcessGroup {
  /** The topic. */
  readonly topic: string;
  /** The consumer group. */
  readonly group: string;
  /** The member's consumer name. */
  readonly consumer: string;
  /** Its handlers' concurrency. */
  readonly concurrency: number;
}

/**
 * What a process says of itself in `{emq}:procs` (the JSON wire form, docs/protocol.md §1):
 * where it runs, what it is, and what it runs.
 */
export interface ProcessInfo {
  /** The host name. */
  readonly host: string;
  /** The process id on that host. */
  readonly pid: number;
  /** The runtime, e.g. `node 20.11.1` or `go`. */
  readonly runtime: string;
  /** The EchoMQ release. */
  readonly version: string;
  /** When the process started describing itself (epoch ms, its own clock). */
  readonly started: number;
  /** Its queue consumers. */
  readonly queues: readonly ProcessQueue[];
  /** Its Bus consumer-group members. */
  readonly groups: readonly ProcessGroup[];
  /** Other roles it plays: `flow-relay`, `scheduler`, `cache-follower`. */
  readonly roles: readonly string[];
  /** True when lists were cut to keep the text within `MAX_PROCESS_INFO_BYTES`. */
  readonly truncated?: boolean;
}

/**
 * The running description of this process: upper layers (a queue consumer, a group member, the
 * flow relay, the scheduler, the cache follower) add a part when they start and remove it when
 * they stop; the node lease sends `text()` with every renewal, so the description costs no round
 * trip of its own.
 */
export class ProcessDescription {
  private readonly parts = new Set<() => ProcessPart>();
  private readonly started = Date.now();
  private pending?: NodeJS.Timeout;
  /**
   * Called (once per burst of changes, 50 ms later) when a part is added or removed: the
   * connection renews its lease then, so a consumer shows up at once, not a renewal later.
   */
  onChange?: () => void;

  /** Adds a part (read at each renewal); returns the function that removes it. */
  add(part: () => ProcessPart): () => void {
    this.parts.add(part);
    this.changed();
    return () => {
      if (this.parts.delete(part)) this.changed();
    };
  }

  private changed(): void {
    if (this.pending || !this.onChange) return;
    this.pending = setTimeout(() => {
      this.pending = undefined;
      this.onChange?.();
    }, 50);
    this.pending.unref();
  }

  /** The description now. */
  info(): ProcessInfo {
    const queues: ProcessQueue[] = [];
    const groups: ProcessGroup[] = [];
    const roles = new Set<string>();
    for (const read of this.parts) {
      const p = read();
      if (p.kind === 'queue') queues.push({ name: p.queue, concurrency: p.concurrency, active: p.active });
      else if (p.kind === 'group') groups.push({ topic: p.topic, group: p.group, consumer: p.consumer, concurrency: p.concurrency });
      else roles.add(p.role);
    }
    return { host: hostname(), pid: process.pid, runtime: `node ${process.versions.node}`, version: ECHOMQ_VERSION, started: this.started, queues, groups, roles: [...roles] };
  }

  /**
   * The description as node.lua takes it: JSON of at most `MAX_PROCESS_INFO_BYTES` bytes (the
   * longer list is cut, `truncated` set, until it fits), no control character (DEL escaped).
   */
  text(): string {
    const info = this.info();
    const queues = [...info.queues];
    const groups = [...info.groups];
    const encode = (o: object) => JSON.stringify(o).replace(/\x7f/g, '\\u007f');
    let text = encode(info);
    while (Buffer.byteLength(text) > MAX_PROCESS_INFO_BYTES) {
      if (queues.length === 0 && groups.length === 0) return encode({ ...info, host: info.host.slice(0, 255), queues, groups, roles: info.roles.slice(0, 8), truncated: true });
      if (queues.length >= groups.length) queues.pop();
      else groups.pop();
      text = encode({ ...info, queues, groups, truncated: true });
    }
    return text;
  }
}
