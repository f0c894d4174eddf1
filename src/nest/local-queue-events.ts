import { Injectable, Logger } from '@nestjs/common';
import { decodeStored } from '../queue/stored-text.js';
import { describeError } from '../core/reply-errors.js';
import type { Json } from '../core/codec.js';
import type { FailureListener, JobFailure } from '../queue/consumer/index.js';
import type { ConsumerListener, RunnerCompletion } from '../queue/telemetry-hooks.js';
import type { QueueEventDetail, QueueEventName } from '../queue/event-log-reader.js';

/** A local `@OnQueueEvent` listener. */
interface LocalListener {
  readonly kinds: ReadonlySet<QueueEventName>;
  readonly handler: (e: QueueEventDetail) => unknown;
  readonly name: string;
}

/**
 * The in-process side of `@OnQueueEvent(queue, kind)` (scope `local`): this app's consumer loops
 * tell it what they settle — completions the complete script accepted (with the handler's
 * result) and failed attempts once the retry script recorded them (with the error, the attempt
 * and what followed) — and it calls the listeners of that queue. No Valkey round trip; at most
 * once (a process that dies takes its events along). A listener that throws or rejects is
 * logged, never the consumer's concern.
 */
@Injectable()
export class LocalQueueEvents {
  private readonly logger = new Logger('EchoMQ');
  private readonly byQueue = new Map<string, LocalListener[]>();

  /** Registers a listener (the orchestrator does, at module init). */
  add(queue: string, kinds: readonly QueueEventName[], handler: (e: QueueEventDetail) => unknown, name: string): void {
    const list = this.byQueue.get(queue) ?? [];
    list.push({ kinds: new Set(kinds), handler, name });
    this.byQueue.set(queue, list);
  }

  /** `next`, also telling this queue's `completed` listeners (`next` itself when there are none). */
  listener(queue: string, next: ConsumerListener): ConsumerListener {
    const list = this.byQueue.get(queue)?.filter((l) => l.kinds.has('completed'));
    if (!list?.length) return next;
    return {
      completions: (sent: readonly RunnerCompletion[], replies: readonly number[]) => {
        next.completions(sent, replies);
        const at = new Date();
        sent.forEach((c, i) => {
          if (replies[i] !== 1) return;
          const result = c.result ? decodeStored<Json>(c.result).value : undefined;
          for (const l of list) this.call(l, { queue, kind: 'completed', id: c.id, at, scope: 'local', result, attempt: c.attempt });
        });
      },
      reaped: (r) => next.reaped(r),
    };
  }

  /** `next`, also telling this queue's `failed` / `retried` / `buried` listeners (`next` itself when there are none). */
  failures(queue: string, next?: FailureListener): FailureListener | undefined {
    const list = this.byQueue.get(queue)?.filter((l) => l.kinds.has('failed') || l.kinds.has('retried') || l.kinds.has('buried'));
    if (!list?.length) return next;
    return (f: JobFailure) => {
      next?.(f);
      const base = { queue, id: f.id, at: f.at, scope: 'local' as const, error: f.error, attempt: f.attempt, outcome: f.outcome };
      const own = f.outcome === 'retry' ? 'retried' : 'buried';
      for (const l of list) {
        if (l.kinds.has('failed')) this.call(l, { ...base, kind: 'failed' });
        if (l.kinds.has(own)) this.call(l, { ...base, kind: own, outcome: undefined });
      }
    };
  }

  private call(l: LocalListener, e: QueueEventDetail): void {
    const warn = (err: unknown) => this.logger.warn(`${l.name} threw on "${e.kind}" of job ${e.id} (queue "${e.queue}"): ${describeError(err)}`);
    try {
      const out = l.handler(e);
      if (out && typeof (out as PromiseLike<unknown>).then === 'function') (out as Promise<unknown>).catch(warn);
    } catch (err) {
      warn(err);
    }
  }
}
