import { decodeExtras } from '../../core/extras.js';
import type { Json } from '../../core/codec.js';
import type { Job } from '../job.js';
import type { JobControls } from '../job-controls.js';
import type { WireClaim } from '../../core/wire/index.js';
import { LeaseLostError, StaleTokenError } from '../../core/errors.js';

/**
 * The claimed job a `RunningJob` reads (the runner passes its `Held` record itself, so a job costs
 * no second object): its id, token, attempt and extras, and the abort behind `job.signal`.
 */
export interface RunningClaim {
  readonly id: string;
  readonly token: string;
  readonly claim: Pick<WireClaim, 'attempt' | 'extras'>;
  readonly abort: { readonly signal: AbortSignal; abort(reason: unknown): void };
  /** Set once the lease is known lost: the handler's outcome is ignored. */
  lost?: boolean;
}

const noWrite = (): Promise<void> => Promise.reject(new Error('job writes need a consumer with controls'));

/**
 * The `Job` a handler receives: one object per job, its accessors and writes on the prototype
 * (a busy loop runs tens of thousands of jobs a second; an object literal with getters and bound
 * writes costs eight allocations per job, this costs one).
 */
export class RunningJob implements Job<unknown> {
  /** The decoded payload (set by the runner before the handler starts). */
  payload: unknown;

  constructor(
    private readonly h: RunningClaim,
    /** The queue it was claimed from. */
    readonly queue: string,
    /** The last checkpoint an earlier attempt saved (undefined on a fresh start). */
    readonly checkpointed: Json | undefined,
    private readonly controls: JobControls | undefined,
  ) {}

  /** The branded job id. */
  get id(): string {
    return this.h.id;
  }

  /** 1 on the first attempt. */
  get attempt(): number {
    return this.h.claim.attempt;
  }

  /** The fencing token of this claim. */
  get token(): string {
    return this.h.token;
  }

  /** The producer's `traceparent`, when the job carries extras with one (a plain job: no parse). */
  get traceparent(): string | undefined {
    return this.h.claim.extras ? decodeExtras(this.h.claim.extras).tp : undefined;
  }

  /** The job's name, when it carries extras with one (a plain job: no parse). */
  get name(): string | undefined {
    return this.h.claim.extras ? decodeExtras(this.h.claim.extras).n : undefined;
  }

  /** Aborts when the lease is lost, a cancel was requested, the timeout passed or the app stops. */
  get signal(): AbortSignal {
    return this.h.abort.signal;
  }

  /** Saves a checkpoint, fenced by the claim token. */
  checkpoint(state: Json): Promise<void> {
    return this.controls ? this.fenced(this.controls.checkpoint(this.h, state)) : noWrite();
  }

  /** Records progress, fenced by the claim token. */
  progress(value: Json): Promise<void> {
    return this.controls ? this.fenced(this.controls.progress(this.h, value)) : noWrite();
  }

  /** Appends a log line, fenced by the claim token. */
  log(line: string): Promise<void> {
    return this.controls ? this.fenced(this.controls.log(this.h, line)) : noWrite();
  }

  /**
   * A write the token refused (`StaleTokenError`) proves the lease lost: the signal aborts with
   * `LeaseLostError` at once, not at the next extension, and the outcome is ignored. The write
   * still rejects with the `StaleTokenError`.
   */
  private fenced(write: Promise<void>): Promise<void> {
    return write.catch((err: unknown) => {
      if (err instanceof StaleTokenError && !this.h.lost) {
        this.h.lost = true;
        this.h.abort.abort(new LeaseLostError(this.h.id, this.queue));
      }
      throw err;
    });
  }
}
