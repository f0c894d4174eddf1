import 'reflect-metadata';
import { Body, Controller, Get, Module, NotFoundException, Param, Post, Query, type INestApplication, type LoggerService } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { Redis } from 'iovalkey';
import {
  BusService,
  EchoMqError,
  EchoMqExceptionFilter,
  EchoMqModule,
  QueueService,
  type EchoMqErrorCode,
  type Json,
} from '../../src/index.js';
import { HTTP_STATUS_OF, RETRY_AFTER_SECONDS } from '../../src/nest/exception-filter.js';
import { queueKeys } from '../../src/protocol.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/testing.js';
import { randomQueue } from '../helpers/valkey.js';

const Q = randomQueue('http');

@Controller()
class JobsController {
  constructor(
    private readonly queues: QueueService,
    private readonly bus: BusService,
  ) {}

  @Get('jobs/:id')
  async job(@Param('id') id: string) {
    const job = await this.queues.getJob(Q, id);
    if (!job) throw new EchoMqError('EMQ_NOT_FOUND', `no job ${id} in ${Q}`);
    return job;
  }

  @Post('queues/:queue/jobs')
  async enqueue(@Param('queue') queue: string, @Body() body: { payload: Json }, @Query('delay') delay?: string) {
    return { id: await this.queues.enqueue(queue, body.payload, delay === undefined ? {} : { delay: Number(delay) }) };
  }

  @Get('dead-letters/:topic')
  deadLetters(@Param('topic') topic: string, @Query('count') count: string) {
    return this.bus.deadLetters(topic, { count: Number(count) });
  }

  @Get('throw/:code')
  throwCode(@Param('code') code: EchoMqErrorCode) {
    throw new EchoMqError(code, 'detail: redis://svc:hunter2@10.0.0.5:6379 maxRetriesPerRequest=2');
  }

  @Get('plain')
  plain() {
    throw new Error('not an EchoMQ error');
  }

  @Get('nest-404')
  nest404() {
    throw new NotFoundException('no such thing');
  }
}

let valkey: EmbeddedValkey;
let raw: Redis;

/** What the server side logged as errors (the filter logs every 5xx with its real message). */
const serverLog: string[] = [];
const capture: LoggerService = { log: () => undefined, warn: () => undefined, error: (m: string) => void serverLog.push(m) };

async function boot(style: 'useGlobalFilters' | 'APP_FILTER'): Promise<{ app: INestApplication; base: string }> {
  @Module({
    imports: [EchoMqModule.forRoot({ connection: { url: valkey.url, commandTimeoutMs: 3000 }, defaults: { maxPayloadBytes: 1024 } })],
    controllers: [JobsController],
    providers: style === 'APP_FILTER' ? [{ provide: APP_FILTER, useClass: EchoMqExceptionFilter }] : [],
  })
  class AppModule {}
  const mod = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = mod.createNestApplication({ logger: capture }); // Nest's logger is process-wide: one for both apps
  if (style === 'useGlobalFilters') app.useGlobalFilters(new EchoMqExceptionFilter());
  await app.listen(0, '127.0.0.1');
  return { app, base: await app.getUrl() };
}

interface Answer {
  status: number;
  retryAfter: string | null;
  body: Record<string, unknown>;
}

async function call(base: string, path: string, init?: { method: string; body: unknown }): Promise<Answer> {
  const res = await fetch(`${base}${path}`, init && { method: init.method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(init.body) });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as Record<string, unknown> };
}

const LEAKS = /hunter2|maxRetries|10\.0\.0\.5|127\.0\.0\.1|ECONNREFUSED|retry limit|:\d{4,5}\b/i;

describe('EchoMqExceptionFilter over real HTTP', () => {
  const apps: Record<string, { app: INestApplication; base: string }> = {};
  beforeAll(async () => {
    valkey = await startEmbeddedValkey();
    raw = new Redis(valkey.url, { maxRetriesPerRequest: 1 });
    apps.useGlobalFilters = await boot('useGlobalFilters');
    apps.APP_FILTER = await boot('APP_FILTER');
  });
  afterAll(async () => {
    if (raw.status !== 'end') raw.disconnect();
    for (const a of Object.values(apps)) await a.app.close();
    await valkey.stop();
  });

  describe.each(['useGlobalFilters', 'APP_FILTER'])('registered with %s', (style) => {
    const base = () => apps[style].base;

    it('answers every code with its status, its code, a reason phrase, and Retry-After on each 503', async () => {
      const codes = Object.keys(HTTP_STATUS_OF) as EchoMqErrorCode[];
      expect(codes.length).toBeGreaterThanOrEqual(25);
      for (const code of codes) {
        const got = await call(base(), `/throw/${code}`);
        const status = HTTP_STATUS_OF[code];
        expect([code, got.status, got.body.statusCode, got.body.code]).toEqual([code, status, status, code]);
        expect(typeof got.body.error).toBe('string');
        expect(Object.keys(got.body).sort()).toEqual(['code', 'error', 'message', 'statusCode']);
        expect([code, got.retryAfter]).toEqual([code, status === 503 ? String(RETRY_AFTER_SECONDS) : null]);
        // A client error shows its message with the URL's credentials masked; a server error a fixed text.
        if (status < 500) expect(got.body.message).toBe('detail: redis://***@10.0.0.5:6379 maxRetriesPerRequest=2');
        else expect([code, got.body.message]).toEqual([code, expect.not.stringMatching(LEAKS)]);
      }
      expect(HTTP_STATUS_OF).toMatchObject({
        EMQ_BAD_NAME: 400, EMQ_BAD_ID: 400, EMQ_BAD_PAYLOAD: 400, EMQ_BAD_OPTION: 400, EMQ_BAD_ARG: 400,
        EMQ_PAYLOAD_TOO_LARGE: 413, EMQ_NOT_FOUND: 404, EMQ_STALE_TOKEN: 409,
        EMQ_UNAVAILABLE: 503, EMQ_OOM: 503, EMQ_BUSY: 503, EMQ_LOADING: 503, EMQ_READONLY: 503, EMQ_NODE_LEASE: 503, EMQ_ID_COLLISION: 503,
        EMQ_WRONGTYPE: 500, EMQ_NOPERM: 500, EMQ_AUTH: 500, EMQ_EVICTION_POLICY: 500, EMQ_VERSION: 500, EMQ_INTERNAL: 500,
      });
    });

    it('leaves other errors to Nest: a plain Error is a 500, an HttpException keeps its own answer', async () => {
      expect(await call(base(), '/plain')).toEqual({ status: 500, retryAfter: null, body: { statusCode: 500, message: 'Internal server error' } });
      expect(await call(base(), '/nest-404')).toEqual({ status: 404, retryAfter: null, body: { statusCode: 404, error: 'Not Found', message: 'no such thing' } });
    });

    it('real causes: a bad id, a bad name, a bad option, an oversized payload, an unknown job', async () => {
      expect(await call(base(), '/jobs/jobzzzzzzzzzzz')).toMatchObject({ status: 400, body: { statusCode: 400, error: 'Bad Request', code: 'EMQ_BAD_ID' } });
      expect(await call(base(), '/queues/a%7Bb/jobs', { method: 'POST', body: { payload: 1 } })).toMatchObject({ status: 400, body: { code: 'EMQ_BAD_NAME' } });
      expect(await call(base(), `/queues/${Q}/jobs?delay=-1`, { method: 'POST', body: { payload: 1 } })).toMatchObject({ status: 400, body: { code: 'EMQ_BAD_OPTION' } });
      expect(await call(base(), '/dead-letters/t?count=0')).toMatchObject({ status: 400, body: { code: 'EMQ_BAD_OPTION', message: 'deadLetters count must be an integer in 1..1000' } });
      const big = await call(base(), `/queues/${Q}/jobs`, { method: 'POST', body: { payload: 'x'.repeat(2000) } });
      expect(big).toEqual({ status: 413, retryAfter: null, body: { statusCode: 413, error: 'Payload Too Large', code: 'EMQ_PAYLOAD_TOO_LARGE', message: 'payload is 2002 bytes, the limit is 1024' } });
      const { body } = await call(base(), `/queues/${Q}/jobs`, { method: 'POST', body: { payload: 'ok' } });
      expect((await call(base(), `/jobs/${body.id as string}`)).status).toBe(200);
      const unknown = (body.id as string).replace(/.$/, (c) => (c === '0' ? '1' : '0'));
      expect(await call(base(), `/jobs/${unknown}`)).toMatchObject({ status: 404, body: { code: 'EMQ_NOT_FOUND', message: `no job ${unknown} in ${Q}` } });
    });
  });

  it('real causes of server errors: a foreign key (500) and an out-of-memory server (503), with fixed messages', async () => {
    const base = apps.useGlobalFilters.base;
    const foreign = randomQueue('foreign');
    await raw.set(queueKeys(foreign).meta, 'not a hash');
    expect(await call(base, `/queues/${foreign}/jobs`, { method: 'POST', body: { payload: 1 } })).toEqual({
      status: 500, retryAfter: null, body: { statusCode: 500, error: 'Internal Server Error', code: 'EMQ_WRONGTYPE', message: 'internal error' },
    });
    await raw.config('SET', 'maxmemory', '1');
    try {
      expect(await call(base, `/queues/${Q}/jobs`, { method: 'POST', body: { payload: 1 } })).toEqual({
        status: 503, retryAfter: '5', body: { statusCode: 503, error: 'Service Unavailable', code: 'EMQ_OOM', message: 'the queue store is out of memory; retry later' },
      });
    } finally {
      await raw.config('SET', 'maxmemory', '0');
    }
  });

  it('an unavailable Valkey is a 503 with Retry-After, and its message names no host, port or retry setting', async () => {
    const { base } = apps.useGlobalFilters;
    const { body } = await call(base, `/queues/${Q}/jobs`, { method: 'POST', body: { payload: 'before' } });
    serverLog.length = 0;
    await raw.quit();
    await valkey.stop();
    for (const path of [`/jobs/${body.id as string}`, `/queues/${Q}/jobs`]) {
      const got = await call(base, path, path.startsWith('/queues') ? { method: 'POST', body: { payload: 1 } } : undefined);
      expect(got).toEqual({
        status: 503, retryAfter: String(RETRY_AFTER_SECONDS), body: { statusCode: 503, error: 'Service Unavailable', code: 'EMQ_UNAVAILABLE', message: 'the queue store is unavailable; retry later' },
      });
    }
    // What the connection really said, logged server-side only: the client's retry setting.
    const logged = serverLog.filter((m) => m.startsWith('EMQ_UNAVAILABLE: '));
    expect(logged.length).toBeGreaterThanOrEqual(2);
    for (const m of logged) expect(m).toMatch(LEAKS);
  });
});
