import { STATUS_CODES } from 'node:http';
import { Catch, HttpStatus, Logger, type ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { EchoMqError, EchoMqExceptionFilter } from '@echomq/nestjs';
import { isStoreConnectionError } from '../store/store.client.js';

/** The `Retry-After` (s) of every 503: the store reconnects every ≤ 1 s, EchoMQ's connection about as fast. */
export const RETRY_AFTER_S = 1;

/** How often an outage's 503s are logged (ms): once per window, not once per request. */
const LOG_EVERY_MS = 10_000;

/** A logger whose errors are written at most once per `LOG_EVERY_MS`. */
class OncePerOutageLogger extends Logger {
  private last = 0;
  override error(message: unknown, ...rest: unknown[]): void {
    if (Date.now() - this.last < LOG_EVERY_MS) return;
    this.last = Date.now();
    super.error(message, ...rest);
  }
}

/** EchoMQ's filter with this app's `Retry-After` and its 5xx logged once per window. */
class EchoMqErrors extends EchoMqExceptionFilter {
  protected override readonly retryAfterSeconds = RETRY_AFTER_S;
  protected override readonly logger = new OncePerOutageLogger('EchoMqExceptionFilter');
}

/**
 * The app's one exception filter: EchoMQ errors as `EchoMqExceptionFilter` answers them (400, 404,
 * 409, 503 for `EMQ_UNAVAILABLE` and the other transient codes, all with `Retry-After: 1`), the
 * store's connection errors (Valkey down, see store/store.client.ts) as 503 with `Retry-After: 1`
 * and the JSON body `{statusCode, error, code: 'STORE_UNAVAILABLE', message}`, and everything else
 * as Nest answers it (HttpExceptions as thrown, anything else 500).
 */
@Catch()
export class StoreUnavailableFilter extends BaseExceptionFilter {
  private readonly log = new Logger('StoreUnavailable');
  private echo?: EchoMqErrors;
  private lastLogged = 0;

  /** Answers `err`. */
  override catch(err: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw err;
    if (err instanceof EchoMqError) return (this.echo ??= new EchoMqErrors(this.httpAdapterHost)).catch(err, host);
    if (!isStoreConnectionError(err)) return super.catch(err, host);
    // An outage fails every request: log it once per window, not once per request.
    if (Date.now() - this.lastLogged > LOG_EVERY_MS) {
      this.lastLogged = Date.now();
      this.log.warn(`answering 503: the store is unreachable (${err instanceof Error ? err.message : String(err)})`);
    }
    const adapter = this.httpAdapterHost?.httpAdapter ?? this.applicationRef;
    const res: unknown = host.switchToHttp().getResponse();
    if (!adapter) throw err;
    if (adapter.isHeadersSent(res)) return void adapter.end(res);
    const status = HttpStatus.SERVICE_UNAVAILABLE;
    adapter.setHeader(res, 'Retry-After', String(RETRY_AFTER_S));
    adapter.reply(res, { statusCode: status, error: STATUS_CODES[status], code: 'STORE_UNAVAILABLE', message: 'the exchange store is unavailable; retry later' }, status);
  }
}
