/**
 * Server replies to typed EchoMQ errors (the classes are in errors.ts): a script's
 * `EMQ_<CODE> message`, a server refusal by its leading word, a lost connection. errors.ts
 * re-exports both functions, so callers import them from there.
 */
import {
  EchoMqError,
  InvalidNameError,
  InvalidIdError,
  InvalidPayloadError,
  InvalidOptionError,
  StaleTokenError,
  VersionMismatchError,
  WrongTypeError,
  NotFoundError,
  InvalidCursorError,
  JobStateError,
  InvalidScheduleError,
  FlowTooLargeError,
  OutOfMemoryError,
  PermissionDeniedError,
  AuthenticationError,
  ReadOnlyError,
  ServerBusyError,
  ServerLoadingError,
  ServerRefusalError,
  ValkeyUnavailableError,
} from './errors.js';

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
  EMQ_WRONGTYPE: (m) => new WrongTypeError(m),
  EMQ_NOT_FOUND: (m) => new NotFoundError(m),
  EMQ_BAD_CURSOR: (m) => new InvalidCursorError(m),
  EMQ_JOB_STATE: (m) => new JobStateError(m),
  EMQ_BAD_SCHEDULE: (m) => new InvalidScheduleError(m),
  EMQ_FLOW_TOO_LARGE: (m) => new FlowTooLargeError(m),
};

/** Server refusals by their reply's leading word (the rest is the server's text, kept as the message). */
const byServerWord: Record<string, (msg: string, cause: unknown) => EchoMqError> = {
  OOM: (m, c) => new OutOfMemoryError(m, c),
  NOPERM: (m, c) => new PermissionDeniedError(m, c),
  WRONGTYPE: (m, c) => new WrongTypeError(m, c),
  NOAUTH: (m, c) => new AuthenticationError(m, c),
  WRONGPASS: (m, c) => new AuthenticationError(m, c),
  READONLY: (m, c) => new ReadOnlyError(m, c),
  BUSY: (m, c) => new ServerBusyError(m, c),
  LOADING: (m, c) => new ServerLoadingError(m, c),
  // Topology in motion or a primary that cannot accept writes now: retry later.
  CLUSTERDOWN: (m, c) => new ServerRefusalError('EMQ_UNAVAILABLE', m, c),
  MOVED: (m, c) => new ServerRefusalError('EMQ_UNAVAILABLE', m, c),
  ASK: (m, c) => new ServerRefusalError('EMQ_UNAVAILABLE', m, c),
  TRYAGAIN: (m, c) => new ServerRefusalError('EMQ_UNAVAILABLE', m, c),
  MASTERDOWN: (m, c) => new ServerRefusalError('EMQ_UNAVAILABLE', m, c),
  NOREPLICAS: (m, c) => new ServerRefusalError('EMQ_UNAVAILABLE', m, c),
  MISCONF: (m, c) => new ServerRefusalError('EMQ_UNAVAILABLE', m, c),
};

const CONNECTION_FAILURE = /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|Connection is closed|max retries|Command timed out|MaxRetriesPerRequest|Stream isn't writeable|enableOfflineQueue/i;

/**
 * Maps any error met talking to Valkey to a typed EchoMQ error, so callers never see a bare
 * `ReplyError` or Lua error: a script's `EMQ_<CODE> message` reply to its class; a server refusal
 * (`OOM`, `NOPERM`, `ERR ACL failure in script`, `WRONGTYPE`, `NOAUTH`/`WRONGPASS`, `READONLY`,
 * `BUSY`, `LOADING`, cluster redirections and `CLUSTERDOWN`) to its code, keeping the server's text
 * as the message and the reply as the cause; a lost connection or a timeout to `EMQ_UNAVAILABLE`;
 * anything else to `EMQ_INTERNAL`, its text kept. Idempotent.
 */
export function fromReplyError(err: unknown): EchoMqError {
  if (err instanceof EchoMqError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const m = /(EMQ_[A-Z_]+) (.*)$/s.exec(message);
  if (m) {
    const make = byCode[m[1]];
    if (make) return make(m[2]);
    return new EchoMqError('EMQ_INTERNAL', m[2], { cause: err });
  }
  const word = /^[A-Z]+/.exec(message)?.[0] ?? '';
  const refusal = byServerWord[word];
  if (refusal) return refusal(message, err);
  if (/^ERR ACL failure|no permissions to (run|access)/i.test(message)) return new PermissionDeniedError(message, err);
  if (/^ERR (invalid password|AUTH|Client sent AUTH)/i.test(message)) return new AuthenticationError(message, err);
  if (CONNECTION_FAILURE.test(message)) return new ValkeyUnavailableError(`Valkey is unavailable: ${message}`, err);
  return new EchoMqError('EMQ_INTERNAL', message, { cause: err });
}

/** An error as one log line: its stable code (when it is EchoMQ's) and its text. */
export function describeError(err: unknown): string {
  if (err instanceof EchoMqError) return `${err.code} ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}
