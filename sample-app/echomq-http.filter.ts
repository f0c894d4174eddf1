import { Catch, HttpStatus, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { EchoMqError, type EchoMqErrorCode } from '@echomq/nestjs';

/** The HTTP status of each EchoMQ error code (exhaustive: a new code fails to compile here). */
export const HTTP_STATUS_OF: Readonly<Record<EchoMqErrorCode, number>> = {
  EMQ_BAD_NAME: HttpStatus.BAD_REQUEST,
  EMQ_BAD_ID: HttpStatus.BAD_REQUEST,
  EMQ_BAD_PAYLOAD: HttpStatus.BAD_REQUEST,
  EMQ_BAD_OPTION: HttpStatus.BAD_REQUEST,
  EMQ_BAD_SCHEDULE: HttpStatus.BAD_REQUEST,
  EMQ_BAD_ARG: HttpStatus.BAD_REQUEST,
  EMQ_WRONGTYPE: HttpStatus.INTERNAL_SERVER_ERROR,
  EMQ_BATCH_TOO_LARGE: HttpStatus.BAD_REQUEST,
  EMQ_PAYLOAD_TOO_LARGE: HttpStatus.PAYLOAD_TOO_LARGE,
  EMQ_NOT_FOUND: HttpStatus.NOT_FOUND,
  EMQ_STALE_TOKEN: HttpStatus.CONFLICT,
  EMQ_UNAVAILABLE: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_OOM: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_BUSY: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_LOADING: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_READONLY: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_NODE_LEASE: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_ID_COLLISION: HttpStatus.SERVICE_UNAVAILABLE,
  EMQ_NOPERM: HttpStatus.INTERNAL_SERVER_ERROR,
  EMQ_AUTH: HttpStatus.INTERNAL_SERVER_ERROR,
  EMQ_EVICTION_POLICY: HttpStatus.INTERNAL_SERVER_ERROR,
  EMQ_VERSION: HttpStatus.INTERNAL_SERVER_ERROR,
  EMQ_INTERNAL: HttpStatus.INTERNAL_SERVER_ERROR,
  EMQ_FLOW_CYCLE: HttpStatus.BAD_REQUEST,
  EMQ_FLOW_TOO_DEEP: HttpStatus.BAD_REQUEST,
  EMQ_FLOW_TOO_LARGE: HttpStatus.BAD_REQUEST,
};

const REASON: Readonly<Record<number, string>> = {
  400: 'Bad Request',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** The body of an EchoMQ error reply. */
export interface EchoMqErrorBody {
  readonly statusCode: number;
  readonly error: string;
  readonly code: EchoMqErrorCode;
  readonly message: string;
}

/**
 * Answers EchoMQ errors with their HTTP status and stable code, e.g. `InvalidIdError` →
 * `400 { code: "EMQ_BAD_ID", … }`. Client errors show their message; server errors are logged
 * and answered with a generic message.
 */
@Catch(EchoMqError)
export class EchoMqHttpFilter implements ExceptionFilter<EchoMqError> {
  private readonly logger = new Logger('EchoMqHttpFilter');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  /** Writes the reply. */
  catch(err: EchoMqError, host: ArgumentsHost): void {
    const statusCode = HTTP_STATUS_OF[err.code] ?? HttpStatus.INTERNAL_SERVER_ERROR;
    const serverSide = statusCode >= 500;
    if (serverSide) this.logger.error(`${err.code}: ${err.message}`, err.stack);
    const body: EchoMqErrorBody = {
      statusCode,
      error: REASON[statusCode] ?? 'Error',
      code: err.code,
      message: serverSide ? (statusCode === 503 ? 'the queue is unavailable, try again later' : 'internal error') : err.message,
    };
    this.adapterHost.httpAdapter.reply(host.switchToHttp().getResponse(), body, statusCode);
  }
}
