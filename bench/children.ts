/**
 * The parent side of the multi-process case: spawns `node bench/dist/worker.js` children, each
 * running one consumer, and talks to them over the IPC channel.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SystemName } from './common.js';

/** What a child worker is told on its command line (one JSON argument). */
export interface WorkerArgs {
  readonly system: SystemName;
  readonly url: string;
  readonly queue: string;
  readonly concurrency: number;
}

/** Parent → child: start consuming, or stop and exit. */
export type ToChild = { readonly type: 'go' } | { readonly type: 'stop' };

/** Child → parent: connected, jobs processed so far, or stopped (with its CPU time). */
export type FromChild =
  | { readonly type: 'ready' }
  | { readonly type: 'progress'; readonly processed: number; readonly cpuUs?: number }
  | { readonly type: 'stopped'; readonly processed: number; readonly cpuUs: number };

/** What the children reported once stopped. */
export interface ChildrenReport {
  /** Jobs each child processed. */
  readonly processed: number[];
  /** CPU µs the children spent between `go` and `stop`, summed. */
  readonly cpuUs: number;
}

const WORKER = fileURLToPath(new URL('./worker.js', import.meta.url));

/** A set of running child workers. */
export class ChildWorkers {
  private readonly progress: number[];
  private readonly cpu: number[];
  private readonly stopped: (FromChild & { type: 'stopped' })[] = [];
  private waiter?: { n: number; resolve: () => void; reject: (err: Error) => void };
  private failed?: Error;
  private stopping?: Promise<ChildrenReport>;

  private constructor(private readonly children: ChildProcess[]) {
    this.progress = children.map(() => 0);
    this.cpu = children.map(() => 0);
  }

  /** Spawns `count` children and resolves once every one is connected and ready. */
  static async spawn(count: number, args: WorkerArgs): Promise<ChildWorkers> {
    const children = Array.from({ length: count }, () =>
      spawn(process.execPath, [WORKER, JSON.stringify(args)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
    );
    const set = new ChildWorkers(children);
    await Promise.all(children.map((c, i) => set.watch(c, i)));
    return set;
  }

  private watch(child: ChildProcess, i: number): Promise<void> {
    return new Promise((resolve, reject) => {
      child.once('exit', (code) => {
        if (code === 0) return;
        this.failed = new Error(`bench worker ${i} exited with code ${code}`);
        reject(this.failed);
        this.waiter?.reject(this.failed);
      });
      child.on('message', (m: FromChild) => {
        if (m.type === 'ready') resolve();
        else if (m.type === 'progress') this.onProgress(i, m.processed, m.cpuUs);
        else {
          this.onProgress(i, m.processed, m.cpuUs);
          this.stopped.push(m);
        }
      });
    });
  }

  private onProgress(i: number, processed: number, cpuUs?: number): void {
    this.progress[i] = processed;
    if (cpuUs !== undefined) this.cpu[i] = cpuUs;
    if (this.waiter && this.total >= this.waiter.n) {
      this.waiter.resolve();
      this.waiter = undefined;
    }
  }

  /** Jobs processed by all children, as last reported. */
  get total(): number {
    return this.progress.reduce((a, b) => a + b, 0);
  }

  /** CPU µs the children spent since `go`, as last reported (with their progress, every few ms). */
  get cpuUs(): number {
    return this.cpu.reduce((a, b) => a + b, 0);
  }

  /** Tells every child to start consuming. */
  go(): void {
    for (const c of this.children) c.send({ type: 'go' } satisfies ToChild);
  }

  /** Resolves once the children together report `n` processed jobs. */
  reached(n: number): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    if (this.total >= n) return Promise.resolve();
    return new Promise((resolve, reject) => (this.waiter = { n, resolve, reject }));
  }

  /** Stops every child and waits for it to exit (once; later calls return the same report). */
  stop(): Promise<ChildrenReport> {
    this.stopping ??= (async () => {
      const exits = this.children.map((c) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r()))));
      for (const c of this.children) if (c.connected) c.send({ type: 'stop' } satisfies ToChild);
      await Promise.all(exits);
      return { processed: [...this.progress], cpuUs: this.stopped.reduce((a, s) => a + s.cpuUs, 0) };
    })();
    return this.stopping;
  }
}
