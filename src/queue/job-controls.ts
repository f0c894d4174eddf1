import { decodePayload, encodePayload, type Json } from '../core/codec.js';
import type { EchoMqConnection } from '../core/connection/index.js';
import { InvalidOptionError, StaleTokenError } from '../core/errors.js';
import { fromReplyError } from '../core/reply-errors.js';
import type { QueueKeys } from '../core/keys.js';
import { wire } from '../core/wire/index.js';

/** Largest progress value (JSON bytes) and log line (bytes), as `progress.lua` bounds them. */
export const MAX_PROGRESS_BYTES = 4096;
/** Log lines kept per job (the oldest go first). */
export const LOG_LINES = 100;

/**
 * Refuses a value holding NaN or ±Infinity, anywhere in it (`InvalidOptionError`, EMQ_BAD_OPTION):
 * JSON would store it as `null`, so `progress(NaN)` would silently read back as null.
 */
function refuseNonFinite(value: unknown, what: string): void {
  try {
    JSON.stringify(value, (key: string, v: unknown) => {
      if (typeof v === 'number' && !Number.isFinite(v)) {
        throw new InvalidOptionError(`${what} must be JSON: ${key ? `its "${key}" is` : 'it is'} ${v}, which JSON would store as null`);
      }
      return v;
    });
  } catch (err) {
    if (err instanceof InvalidOptionError) throw err; // anything else is for encodePayload to refuse
  }
}

/**
 * The fenced row writes of one queue's running jobs (checkpoint, progress, log) and the read of
 * a retried job's last checkpoint. A stale holder's write is refused with `StaleTokenError` and
 * writes nothing.
 */
export class JobControls {
  constructor(
    private readonly conn: EchoMqConnection,
    private readonly k: QueueKeys,
    private readonly maxCheckpointBytes: number,
  ) {}

  /** Saves `state` as the job's checkpoint, fenced by its claim token (a NaN or ±Infinity in it: `InvalidOptionError`). */
  async checkpoint(job: { id: string; token: string }, state: Json): Promise<void> {
    refuseNonFinite(state, 'a checkpoint');
    return this.write(job, 'c', encodePayload(state, this.maxCheckpointBytes), this.maxCheckpointBytes);
  }

  /** Records the job's progress, fenced by its claim token (`progress(NaN)`: `InvalidOptionError`, nothing written). */
  async progress(job: { id: string; token: string }, value: Json): Promise<void> {
    refuseNonFinite(value, 'progress');
    return this.write(job, 'p', encodePayload(value, MAX_PROGRESS_BYTES), 0);
  }

  /** Appends a line to the job's log, fenced by its claim token. */
  async log(job: { id: string; token: string }, line: string): Promise<void> {
    if (typeof line !== 'string' || line.length === 0 || Buffer.byteLength(line) > MAX_PROGRESS_BYTES) {
      throw new InvalidOptionError(`a log line must be a string of 1..${MAX_PROGRESS_BYTES} bytes`);
    }
    return this.write(job, 'l', line, LOG_LINES);
  }

  /** The checkpoint an earlier attempt saved (undefined when none, or when it is not JSON). */
  async checkpointed(id: string): Promise<Json | undefined> {
    const text = await this.conn.client.hget(this.k.claimedRow(id), 'ckpt').catch((err: unknown) => {
      throw fromReplyError(err);
    });
    try {
      return decodePayload<Json>(text);
    } catch {
      return undefined;
    }
  }

  private async write(job: { id: string; token: string }, what: 'c' | 'p' | 'l', value: string, limit: number): Promise<void> {
    const ok = await wire.progress(this.conn.scriptClient, this.k, job, what, value, limit);
    if (!ok) throw new StaleTokenError(`job ${job.id}: its lease was lost (token ${job.token} is stale); nothing written`);
  }
}
