import { STATUS_CODES } from 'node:http';
import { Catch, HttpStatus, Logger, Optional, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { EchoMqError, type EchoMqErrorCode } from '../core/errors.js';

/**
 * The HTTP status of each EchoMQ error code (exhaustive: a new code fails to compile here).
 * Bad input → 400, too large → 413, not found → 404, a stale fencing token → 409, a transient
 * server condition → 503, a deployment or server-side fault → 500.
 */
export const HTTP_STATUS_OF: Readonly<Record<EchoMqErrorCode, number>> = {
  EMQ_BAD_NAME: HttpStatus.BAD_REQUEST,
  EMQ_BAD_ID: HttpStatus.BAD_REQUEST,
  EMQ_BAD_PAYLOAD: HttpStatus.BAD_REQUEST,
  EMQ_BAD_OPTION: HttpStatus.BAD_REQUEST,
  EMQ_BAD_SCHEDULE: HttpStatus.BAD_REQUEST,
  EMQ_BAD_CURSOR: HttpStatus.BAD_REQUEST,
  EMQ_BAD_ARG: HttpStatus.BAD_REQUEST,
  EMQ_FLOW_CYCLE: HttpStatus.BAD_REQUEST,
  EMQ_FLOW_TOO_DEEP: HttpStatus.BAD_REQUEST,
  EMQ_PAYLOAD_TOO_LARGE: HttpStatus.PAYLOAD_TOO_LARGE,
  EMQ_BATCH_TOO_LARGE: HttpStatus.PAYLOAD_TOO_LARGE,
  EMQ_FLOW_TOO_LARGE: HttpStatus.PAYLOAD_TOO_LARGE,
  EMQ_NOT_FOUND: HttpStatus.NOT_FOUND,
  EMQ_STALE_TOKEN: HttpStatus.CONFLICT,
  EMQ_JOB_STATE: HttpStatus.CONFLICT,
  EMQ_UNAVAILABLE: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_OOM: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_BUSY: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_LOADING: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_READONLY: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_NODE_LEASE: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_LEASE_LOST: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_ID_COLLISION: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_WRONGTYPE: HttpStatus.INTERNAL_SERVER_ERROR,
  EMQ_NOPERM: HttpStatus.INTERNAL_SERVER_ERROR,
  EMQ_AUTH: HttpStatus.INTERNAL_SERVER_ERROR,
  EMQ_EVICTION_POLICY: HttpStatus.INTERNAL_SERVER_ERROR,
  EMQ_VERSION: HttpStatus.INTERNAL_SERVER_ERROR,
  EMQ_INTERNAL: HttpStatus.INTERNAL_SERVER_ERROR,
  EMQ_NO_HANDLER: HttpStatus.INTERNAL_SERVER_ERROR,
};

/**
 * The `Retry-After` of every 503, in seconds: about twice the longest reconnect back-off of the
 * connection (2 s) plus a connect attempt, so a client retrying then usually meets a reconnected
 * (or failed-over, or reloaded) server rather than the same outage.
 */
export const RETRY_AFTER_SECONDS = 5;

/** What a 503 says, per code: fixed text, so no server or connection detail can reach a client. */
const UNAVAILABLE_MESSAGE: Partial<Record<EchoMqErrorCode, string>> = {
  EMQ_UNAVAILABLE: 'the queue store is unavailable; retry later',
  EMQ_OOM: 'the queue store is out of memory; retry later',
  EMQ_BUSY: 'the queue store is busy; retry later',
  EMQ_LOADING: 'the queue store is loading its data; retry later',
  EMQ_READONLY: 'the queue store is read-only (a failover may be under way); retry later',
  EMQ_NODE_LEASE: 'this instance cannot mint ids right now; retry later',
  EMQ_LEASE_LOST: 'this instance lost its lease; retry later',
  EMQ_ID_COLLISION: 'no unique id could be minted; retry later',
};

/** The JSON body of an EchoMQ error reply. */
export interface EchoMqErrorBody {
  /** The HTTP status, as in the response line. */
  readonly statusCode: number;
  /** The status's reason phrase (`Bad Request`, `Service Unavailable`, …). */
  readonly error: string;
  /** The stable EchoMQ code. */
  readonly code: EchoMqErrorCode;
  /** The error's message for a 4xx (credentials in a URL masked); a fixed text for a 5xx. */
  readonly message: string;
}

/** The reply an EchoMQ error becomes: status, extra headers and body. */
export interface EchoMqErrorReply {
  /** The HTTP status (`HTTP_STATUS_OF[code]`). */
  readonly status: number;
  /** Extra response headers: `Retry-After` on a 503. */
  readonly headers: Readonly<Record<string, string>>;
  /** The JSON body. */
  readonly body: EchoMqErrorBody;
}

/** Masks the credentials of any `redis://user:password@` URL in a message. */
const maskCredentials = (text: string): string => text.replace(/(rediss?:\/\/)[^@\s/]*@/gi, '$1***@');

/**
 * The HTTP reply of an EchoMQ error (pure). A client error (4xx) shows the error's message; a
 * server error (5xx) a fixed text, since its message may carry server or connection detail (an
 * `EMQ_UNAVAILABLE` quotes the client's reason, e.g. `connect ECONNREFUSED 10.0.0.5:6379` or its
 * retry limit; a `MOVED` names a node). Every 503 carries `Retry-After`. An unknown code is a 500.
 */
export function echoMqErrorReply(err: EchoMqError, retryAfterSeconds = RETRY_AFTER_SECONDS): EchoMqErrorReply {
  const status = HTTP_STATUS_OF[err.code] ?? HttpStatus.INTERNAL_SERVER_ERROR;
  const unavailable = status === HttpStatus.SERVICE_UNAVAILABLE;
  const message = status < 500 ? maskCredentials(err.message) : unavailable ? (UNAVAILABLE_MESSAGE[err.code] ?? 'retry later') : 'internal error';
  return {
    status,
    headers: unavailable ? { 'Retry-After': String(retryAfterSeconds) } : {},
    body: { statusCode: status, error: STATUS_CODES[status] ?? 'Error', code: err.code, message },
  };
}

/** The Express response calls the filter uses when it has no HTTP adapter. */
interface ExpressLikeResponse {
  readonly headersSent: boolean;
  status(code: number): unknown;
  setHeader(name: string, value: string): unknown;
  json(body: unknown): unknown;
  end(): unknown;
}

const isExpressLike = (r: unknown): r is ExpressLikeResponse =>
  typeof r === 'object' && r !== null && ['status', 'setHeader', 'json', 'end'].every((m) => typeof (r as Record<string, unknown>)[m] === 'function');

/**
 * Answers EchoMQ errors over HTTP with their status (see `HTTP_STATUS_OF`), a JSON body
 * `{ statusCode, error, code, message }` and, for a 503, `Retry-After` (`RETRY_AFTER_SECONDS`).
 * 5xx messages are replaced by fixed texts and the error is logged server-side. Any other error
 * is not caught here: Nest's default handling (or your own filters) answers it.
 *
 * Register it as `app.useGlobalFilters(new EchoMqExceptionFilter())` (it then writes through the
 * Express response; on Fastify pass `app.get(HttpAdapterHost)`), or as a provider
 * `{ provide: APP_FILTER, useClass: EchoMqExceptionFilter }` (the HTTP adapter is injected).
 * Subclass it to change `retryAfterSeconds`. HTTP only: in another context the error is rethrown.
 */
@Catch(EchoMqError)
export class EchoMqExceptionFilter implements ExceptionFilter<EchoMqError> {
  /** Where server-side errors are logged. */
  protected readonly logger = new Logger('EchoMqExceptionFilter');
  /** The `Retry-After` of a 503, in seconds. */
  protected readonly retryAfterSeconds: number = RETRY_AFTER_SECONDS;

  constructor(@Optional() private readonly adapterHost?: HttpAdapterHost) {}

  /** Writes the reply of `err`. */
  catch(err: EchoMqError, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw err;
    const { status, headers, body } = echoMqErrorReply(err, this.retryAfterSeconds);
    if (status >= 500) this.logger.error(`${err.code}: ${err.message}`, err.stack);
    const res: unknown = host.switchToHttp().getResponse();
    const adapter = this.adapterHost?.httpAdapter;
    if (adapter) {
      if (adapter.isHeadersSent(res)) return void adapter.end(res);
      for (const [name, value] of Object.entries(headers)) adapter.setHeader(res, name, value);
      adapter.reply(res, body, status);
      return;
    }
    if (!isExpressLike(res)) throw err;
    if (res.headersSent) return void res.end();
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    res.status(status);
    res.json(body);
  }
}
