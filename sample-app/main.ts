/**
 * The sample app's entry point (`npm run sample`). Uses the Valkey at `ECHOMQ_URL`, or, when it is
 * not set, starts a throwaway valkey-server and stops it on shutdown. Listens on `PORT` (3000).
 */
import 'reflect-metadata';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Logger, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { startEmbeddedValkey, type EmbeddedValkey } from '@echomq/nestjs/testing';
import { AppModule } from './app.module.js';

const log = new Logger('SampleApp');

/** The port to listen on, from `PORT` (default 3000). */
function portFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.PORT?.trim();
  if (!raw) return 3000;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) throw new Error(`PORT must be an integer in 0..65535, got ${JSON.stringify(raw)}`);
  return port;
}

/** `url` with any password masked, for logs. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

/** The URL the app answers on; a wildcard bind is shown as localhost. */
function listenUrl(app: INestApplication): string {
  const addr = (app.getHttpServer() as Server).address() as AddressInfo;
  const wildcard = addr.address === '::' || addr.address === '0.0.0.0';
  const host = wildcard ? 'localhost' : addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return `http://${host}:${addr.port}`;
}

async function main(): Promise<void> {
  const port = portFromEnv();
  let embedded: EmbeddedValkey | undefined;
  let url = process.env.ECHOMQ_URL?.trim();
  if (url) {
    log.log(`Valkey: ${redactUrl(url)} (from ECHOMQ_URL)`);
  } else {
    embedded = await startEmbeddedValkey();
    url = embedded.url;
    log.log(`Valkey: embedded valkey-server at ${url} (pid ${embedded.pid}), stopped on shutdown; set ECHOMQ_URL to use your own`);
  }
  let stopping: Promise<void> | undefined;
  const stopEmbedded = (): Promise<void> =>
    (stopping ??= (async () => {
      if (!embedded) return;
      await embedded.stop();
      log.log(`stopped embedded valkey-server (pid ${embedded.pid})`);
    })());

  let app: INestApplication | undefined;
  try {
    app = await NestFactory.create(AppModule.forRoot({ url, afterClose: embedded ? stopEmbedded : undefined }), {
      abortOnError: false,
      forceCloseConnections: true,
    });
    app.enableShutdownHooks();
    await app.listen(port);
  } catch (err) {
    // Release what started: consumers, the connection, and the embedded server.
    await app?.close().catch(() => undefined);
    await stopEmbedded();
    throw err;
  }
  log.log(`listening on ${listenUrl(app)} (POST /orders, GET /orders/:id, GET /orders/stats/counts)`);
}

main().catch((err: unknown) => {
  log.error(`failed to start: ${err instanceof Error ? err.message : String(err)}`, err instanceof Error ? err.stack : undefined);
  process.exitCode = 1;
});
