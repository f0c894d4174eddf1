import { streamMsOf } from '../../core/event-id.js';
import type { BusEvent } from './options.js';

/**
 * One event as a group handler receives it: plain own fields (so a spread or `JSON.stringify` of
 * it keeps them), `signal` made on first read (an `AbortController` per event is a measurable
 * share of a busy member's CPU, and most handlers never read it). The abort state lives in
 * private fields of the event itself (not own properties: a spread does not see them), so a
 * running entry costs one object, not two.
 */
export class GroupEvent implements BusEvent {
  readonly at: Date;
  #ctrl: AbortController | undefined = undefined;
  /** The abort reason once `abortEvent` ran (`NOT_ABORTED` until then). */
  #reason: unknown = NOT_ABORTED;

  constructor(
    readonly id: string,
    readonly topic: string,
    readonly payload: unknown,
    streamId: string,
    readonly deliveries: number,
  ) {
    this.at = new Date(streamMsOf(streamId));
  }

  /** Aborted when the handler must give up (shutdown past its deadline). */
  get signal(): AbortSignal {
    if (this.#ctrl === undefined) {
      this.#ctrl = new AbortController();
      if (this.#reason !== NOT_ABORTED) this.#ctrl.abort(this.#reason);
    }
    return this.#ctrl.signal;
  }

  /** Aborts `e`'s signal with `reason` (the first call wins; a signal read later is already aborted). */
  static abort(e: GroupEvent, reason: unknown): void {
    if (e.#reason !== NOT_ABORTED) return;
    e.#reason = reason;
    e.#ctrl?.abort(reason);
  }
}

/** `GroupEvent`'s marker of a signal not aborted (any reason, `undefined` included, is a real one). */
const NOT_ABORTED: unique symbol = Symbol('not aborted');
