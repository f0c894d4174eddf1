import 'reflect-metadata';
import { Injectable, type CanActivate, type ExecutionContext, type INestApplication, type Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { AddressInfo } from 'node:net';
import { request as httpRequest } from 'node:http';
import { EchoMqModule } from '../../src/index.js';
import { EchoMqDashboardModule, type EchoMqDashboardOptions } from '../../src/index.js';
import type { Json } from '../../src/core/codec.js';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import { queueKeys, wire } from '../../src/protocol.js';
import type { QueueService } from '../../src/queue/queue-service.js';
import { testUrl } from './valkey.js';

/** A guard that lets a request in when it carries `x-let-in: yes`. */
@Injectable()
export class HeaderGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    return ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-let-in'] === 'yes';
  }
}

/** A Nest app on Express listening on a free loopback port, with EchoMQ and the dashboard mounted. */
export interface DashboardTestApp {
  readonly app: INestApplication;
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string;
}

/** Starts an app with `EchoMqModule.forRoot` on the run's Valkey, the dashboard, and `providers` (processors), on `port` (0: any free one). */
export async function startDashboardApp(dashboard: Partial<EchoMqDashboardOptions>, providers: Type[] = [], consumers = false, port = 0): Promise<DashboardTestApp> {
  const moduleRef = await Test.createTestingModule({
    imports: [EchoMqModule.forRoot({ connection: { url: testUrl() }, consumers }), EchoMqDashboardModule.register({ guard: HeaderGuard, ...dashboard })],
    providers,
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.listen(port, '127.0.0.1');
  const bound = (app.getHttpServer().address() as AddressInfo).port;
  return { app, origin: `http://127.0.0.1:${bound}` };
}

/** The CSRF token of a page (its first form's hidden `_csrf`). */
export function csrfOf(page: string): string {
  const m = /name="_csrf" value="([^"]+)"/.exec(page);
  if (!m) throw new Error('no form token on the page');
  return m[1];
}

/** Enqueues one job per payload, claims them and buries each (a fatal failure): resolves to their ids. */
export async function buryJobs(conn: EchoMqConnection, queues: QueueService, q: string, payloads: Json[]): Promise<string[]> {
  const ids: string[] = [];
  for (const p of payloads) ids.push(await queues.enqueue(q, p));
  const k = queueKeys(q);
  const { jobs } = await wire.claim(conn.scriptClient, k, payloads.length, 30_000);
  for (const j of jobs) await wire.retry(conn.scriptClient, k, { id: j.id, token: j.token, error: 'Error: <b>boom</b>', fatal: true }, { maxAttempts: 1, backoff: 'f:50', deadCap: 1000 });
  return ids;
}

/** What `rawRequest` answered. */
export interface RawReply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** One HTTP request to 127.0.0.1:`port` with any headers, `Host` included (fetch would not forge it). */
export function rawRequest(port: number, method: string, path: string, headers: Record<string, string>, body = ''): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers: { ...headers, ...(body ? { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(body)) } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
