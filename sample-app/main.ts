/**
 * The sample exchange's entry point (`npm run sample`). Uses the Valkey at `ECHOMQ_URL`, or,
 * when it is not set, starts a throwaway valkey-server and stops it on shutdown. Listens on
 * `PORT` (3000). `--instances N` starts N instances (child processes, ports PORT…PORT+N−1) on
 * one Valkey that outlives them (sample-app/launcher.ts; `--no-restart`: a dead instance is not
 * restarted by the launcher).
 */
import 'reflect-metadata';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Logger, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { deriveAdminKey, deriveApiKey } from './config/exchange.config.js';
import { launch } from './launcher.js';

const log = new Logger('SampleApp');

/** The port to listen on, from `PORT` (default 3000). */
function portFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.PORT?.trim();
  if (!raw) return 3000;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) throw new Error(`PORT must be an integer in 0..65535, got ${JSON.stringify(raw)}`);
  return port;
}

/** `--instances N` (default 1). */
function instancesFromArgs(argv: readonly string[]): number {
  const i = argv.indexOf('--instances');
  if (i < 0) return 1;
  const n = Number(argv[i + 1]);
  if (!Number.isInteger(n) || n < 1 || n > 8) throw new Error(`--instances must be an integer in 1..8, got ${JSON.stringify(argv[i + 1])}`);
  return n;
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

/**
 * A few commands to try against `base`. Keys are shown only when they derive from the default
 * `dev-secret` (no `EXCHANGE_SECRET`, no `EXCHANGE_CONFIG`): a real secret's keys stay out of logs.
 */
function tryLines(base: string): string {
  const json = `-H 'content-type: application/json'`;
  const dev = !process.env.EXCHANGE_SECRET?.trim() && !process.env.EXCHANGE_CONFIG?.trim();
  const key = (account: string): string => `-H 'x-api-key: ${dev ? deriveApiKey('dev-secret', account) : `<${account}'s key>`}'`;
  const admin = `-H 'x-api-key: ${dev ? deriveAdminKey('dev-secret') : '<admin key>'}'`;
  return [
    `open ${base}/ in a browser (order books, recent trades, candles), then try:`,
    `  curl -s ${json} ${key('bob')} -d '{"clientOrderId":"b-1","symbol":"ACME","side":"sell","qty":10,"price":100}' ${base}/orders`,
    `  curl -s ${json} ${key('alice')} -d '{"clientOrderId":"a-1","symbol":"ACME","side":"buy","type":"market","qty":4}' ${base}/orders`,
    `  curl -s ${base}/market/trades`,
    `  curl -s ${key('alice')} ${base}/accounts/alice/positions`,
    `  curl -s '${base}/market/candles/ACME?interval=1s'`,
    `  curl -s ${admin} ${base}/stats        (the operator's: also /metrics, and ${base}/admin/queues?key=… in a browser)`,
  ].join('\n');
}

/** Runs one instance in this process. */
async function serve(url: string | undefined, port: number): Promise<INestApplication> {
  let app: INestApplication | undefined;
  try {
    app = await NestFactory.create(AppModule.forRoot({ url, instance: process.env.INSTANCE }), { abortOnError: false, forceCloseConnections: true });
    app.enableShutdownHooks();
    await app.listen(port);
    return app;
  } catch (err) {
    await app?.close().catch(() => undefined);
    throw err;
  }
}

async function main(): Promise<void> {
  const port = portFromEnv();
  const instances = instancesFromArgs(process.argv.slice(2));
  const url = process.env.ECHOMQ_URL?.trim() || undefined;
  if (url) log.log(`Valkey: ${redactUrl(url)} (from ECHOMQ_URL)`);
  if (instances === 1) {
    // No ECHOMQ_URL: the EchoMQ module starts its embedded default (and logs where).
    const app = await serve(url, port);
    const base = listenUrl(app);
    log.log(`listening on ${base}\n${tryLines(base)}`);
    return;
  }
  // Several processes share one Valkey, which outlives them: any instance may be restarted.
  await launch({ url, port, instances, restart: !process.argv.includes('--no-restart'), log, redact: redactUrl });
}

main().catch((err: unknown) => {
  log.error(`failed to start: ${err instanceof Error ? err.message : String(err)}`, err instanceof Error ? err.stack : undefined);
  process.exitCode = 1;
});
