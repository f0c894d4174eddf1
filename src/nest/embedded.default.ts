import { Logger } from '@nestjs/common';
import { startEmbeddedValkey, type EmbeddedValkey } from '../testing/embedded-valkey.js';
import type { EchoMqModuleOptions } from './echomq.options.js';
import { refuseEmbeddedInProduction, wantsEmbedded } from './echomq.validation.js';

/** DI token of the module's embedded `valkey-server` (an `EmbeddedDefault`, or null when a connection is configured). */
export const ECHOMQ_EMBEDDED = Symbol('ECHOMQ_EMBEDDED');

/** The throwaway `valkey-server` the module started because no connection was configured. */
export interface EmbeddedDefault {
  readonly url: string;
  readonly pid: number;
  /** Stops the server (idempotent); the module calls it after its connections have closed. */
  stop(): Promise<void>;
}

/**
 * Starts the embedded default when the options ask for it (no `connection`, or
 * `{ embedded: true }`), else resolves to null. Refused under `NODE_ENV=production`
 * (EMQ_BAD_OPTION). The server is also killed if the process exits without a shutdown.
 */
export async function startEmbeddedDefault(o: EchoMqModuleOptions): Promise<EmbeddedDefault | null> {
  if (!wantsEmbedded(o)) return null;
  refuseEmbeddedInProduction(o);
  const logger = new Logger('EchoMQ');
  const server: EmbeddedValkey = await startEmbeddedValkey();
  const kill = (): void => {
    try {
      process.kill(server.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  };
  process.once('exit', kill);
  logger.log(`started an embedded valkey-server at ${server.url} (pid ${server.pid}), stopped at shutdown; for development and tests only (pass connection: { url } to use your own)`);
  let stopping: Promise<void> | undefined;
  return {
    url: server.url,
    pid: server.pid,
    stop: () =>
      (stopping ??= (async () => {
        process.off('exit', kill);
        await server.stop();
        logger.log(`stopped the embedded valkey-server (pid ${server.pid})`);
      })()),
  };
}
