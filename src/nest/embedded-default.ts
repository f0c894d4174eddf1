import { Logger } from '@nestjs/common';
import { startEmbeddedValkey, type EmbeddedValkey } from '../core/embedded-valkey.js';
import type { EchoMqModuleOptions } from './echomq-options.js';
import { refuseEmbeddedInProduction, wantsEmbedded } from './echomq-validation.js';

/** DI token of the module's embedded `valkey-server` (an `EmbeddedDefault`, or null when a connection is configured). */
export const ECHOMQ_EMBEDDED = Symbol('ECHOMQ_EMBEDDED');

/**
 * The throwaway `valkey-server` the module started because no connection was configured: inject
 * it (`@Optional()`; null when a connection is configured) to reach the same server, e.g. for an
 * app's own client in development.
 */
export abstract class EchoMqEmbeddedServer {
  /** `redis://127.0.0.1:<port>`. */
  abstract readonly url: string;
  /** The server's process id. */
  abstract readonly pid: number;
}

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
  // Detached: Ctrl-C reaches the app only, whose shutdown closes the connections, then stops it.
  const server: EmbeddedValkey = await startEmbeddedValkey({ detached: true });
  const kill = (): void => {
    try {
      process.kill(server.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  };
  // An app without shutdown hooks dies of the signal with no 'exit' event: stop the server then,
  // and let the signal do what it would have done. With hooks (another listener), the app's
  // shutdown stops it in order.
  const onSignal = (sig: NodeJS.Signals): void => {
    for (const s of signals) process.off(s, onSignal); // 'exit' stays hooked: a failed shutdown still kills it
    if (process.listenerCount(sig) > 0) return;
    kill();
    process.kill(process.pid, sig);
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  const unhook = (): void => {
    process.off('exit', kill);
    for (const s of signals) process.off(s, onSignal);
  };
  process.once('exit', kill);
  for (const s of signals) process.on(s, onSignal);
  logger.log(`started an embedded valkey-server at ${server.url} (pid ${server.pid}), stopped at shutdown; for development and tests only (pass connection: { url } to use your own)`);
  let stopping: Promise<void> | undefined;
  return {
    url: server.url,
    pid: server.pid,
    stop: () =>
      (stopping ??= (async () => {
        unhook();
        await server.stop();
        logger.log(`stopped the embedded valkey-server (pid ${server.pid})`);
      })()),
  };
}
