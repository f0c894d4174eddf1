/**
 * The valkey-server that a launcher of several instances (`--instances N`, the load script)
 * starts for them when `ECHOMQ_URL` is not set: the instances are separate processes, so they
 * cannot share one app's embedded default. A single instance needs none of this: its
 * `EchoMqModule` starts and stops its own embedded server.
 */
import type { Logger } from '@nestjs/common';
import { startEmbeddedValkey } from '@echomq/nestjs/testing';

/** An embedded server: its URL and an idempotent stop. */
export interface EmbeddedServer {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

/** Starts a throwaway valkey-server on a free loopback port. */
export async function startEmbedded(log: Logger): Promise<EmbeddedServer> {
  // Its own process group: Ctrl-C reaches the launcher and the instances, which shut down on a
  // live Valkey; the launcher stops it after they exited (or, failing that, when it exits).
  const v = await startEmbeddedValkey({ detached: true });
  process.once('exit', () => {
    try {
      process.kill(v.pid, 'SIGKILL');
    } catch {
      /* already stopped */
    }
  });
  let stopping: Promise<void> | undefined;
  return {
    url: v.url,
    pid: v.pid,
    stop: () =>
      (stopping ??= v.stop().then(() => log.log(`stopped embedded valkey-server (pid ${v.pid})`))),
  };
}
