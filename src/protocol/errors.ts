/** Stable error codes: every refusal EchoMQ makes carries one of these. */
export type EchoMqErrorCode =
  | 'EMQ_BAD_NAME'
  | 'EMQ_BAD_ID'
  | 'EMQ_BAD_PAYLOAD'
  | 'EMQ_PAYLOAD_TOO_LARGE'
  | 'EMQ_BATCH_TOO_LARGE'
  | 'EMQ_BAD_OPTION'
  | 'EMQ_STALE_TOKEN'
  | 'EMQ_VERSION'
  | 'EMQ_UNAVAILABLE'
  | 'EMQ_NOT_FOUND'
  | 'EMQ_BAD_ARG'
  | 'EMQ_INTERNAL';

/** Base class of every EchoMQ error; `code` is stable across releases. */
export class EchoMqError extends Error {
  constructor(
    readonly code: EchoMqErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A queue, topic or namespace name broke the key grammar. */
export class InvalidNameError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_BAD_NAME', message);
  }
}

/** A string is not a well-formed 14-byte branded id. */
export class InvalidIdError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_BAD_ID', message);
  }
}

/** A payload is not representable as JSON. */
export class InvalidPayloadError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_BAD_PAYLOAD', message);
  }
}

/** A payload's JSON form is larger than the configured limit. */
export class PayloadTooLargeError extends EchoMqError {
  constructor(size: number, limit: number) {
    super('EMQ_PAYLOAD_TOO_LARGE', `payload is ${size} bytes, the limit is ${limit}`);
  }
}

/** A batch has more items than one script call accepts. */
export class BatchTooLargeError extends EchoMqError {
  constructor(size: number, limit: number) {
    super('EMQ_BATCH_TOO_LARGE', `batch has ${size} items, the limit is ${limit}`);
  }
}

/** An option is out of range or of the wrong type. */
export class InvalidOptionError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_BAD_OPTION', message);
  }
}

/** The fencing token no longer holds the job: its lease expired and it moved on. */
export class StaleTokenError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_STALE_TOKEN', message);
  }
}

/** The runtime and the data or scripts speak different protocol versions. */
export class VersionMismatchError extends EchoMqError {
  constructor(message: string) {
    super('EMQ_VERSION', message);
  }
}

/** Valkey could not be reached within the configured timeout. */
export class ValkeyUnavailableError extends EchoMqError {
  constructor(message: string, cause?: unknown) {
    super('EMQ_UNAVAILABLE', message, { cause });
  }
}

/** Throw this from a handler to send the job straight to the morgue, without retries. */
export class FatalJobError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'FatalJobError';
  }
}

const byCode: Record<string, (msg: string) => EchoMqError> = {
  EMQ_BAD_NAME: (m) => new InvalidNameError(m),
  EMQ_BAD_ID: (m) => new InvalidIdError(m),
  EMQ_BAD_PAYLOAD: (m) => new InvalidPayloadError(m),
  EMQ_PAYLOAD_TOO_LARGE: (m) => new EchoMqError('EMQ_PAYLOAD_TOO_LARGE', m),
  EMQ_BATCH_TOO_LARGE: (m) => new EchoMqError('EMQ_BATCH_TOO_LARGE', m),
  EMQ_BAD_OPTION: (m) => new InvalidOptionError(m),
  EMQ_STALE_TOKEN: (m) => new StaleTokenError(m),
  EMQ_VERSION: (m) => new VersionMismatchError(m),
  EMQ_BAD_ARG: (m) => new EchoMqError('EMQ_BAD_ARG', m),
};

/**
 * Maps an error reply from a script (`EMQ_<CODE> message`) or from the connection to a typed
 * EchoMQ error, so callers never see a bare Lua error.
 */
export function fromReplyError(err: unknown): Error {
  if (err instanceof EchoMqError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const m = /(EMQ_[A-Z_]+) (.*)$/s.exec(message);
  if (m) {
    const make = byCode[m[1]];
    if (make) return make(m[2]);
    return new EchoMqError('EMQ_INTERNAL', m[2]);
  }
  if (/ECONNREFUSED|ECONNRESET|ETIMEDOUT|Connection is closed|max retries|Command timed out|MaxRetriesPerRequest|Stream isn't writeable|enableOfflineQueue/i.test(message)) {
    return new ValkeyUnavailableError(`Valkey is unavailable: ${message}`, err);
  }
  return err instanceof Error ? err : new Error(message);
}
