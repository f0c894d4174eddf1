import 'reflect-metadata';
import { Controller, Get, Param, UseInterceptors, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { CacheInterceptor, CacheScope, CacheService, EchoMqModule, type HttpRequestLike } from '../../src/index.js';
import { CapturedLogs } from '../helpers/nest.js';
import { randomQueue, testUrl } from '../helpers/valkey.js';

// Issue 14: a tag function of the request that throws or returns non-tags never turns the
// endpoint into an error: the response is served uncached and the error logged.
const NS = randomQueue('tags');
let served = 0;

const bad = {
  throws: (): readonly string[] => {
    throw new Error('no product id');
  },
  numbers: () => [42] as unknown as readonly string[],
  string: () => 'product:1' as unknown as readonly string[],
  spaces: (req: HttpRequestLike) => [`product ${req.params?.id ?? ''}`],
  undefined: () => undefined as unknown as readonly string[],
};

@Controller()
@UseInterceptors(CacheInterceptor)
class Routes {
  @Get('good/:id')
  @CacheScope('public', { tags: (req) => [`item:${req.params?.id ?? ''}`] })
  good(@Param('id') id: string): { id: string; n: number } {
    return { id, n: ++served };
  }

  /** One route per bad tag function, chosen by the path (`/bad/throws`, `/bad/numbers`, …). */
  @Get('bad/:kind/:id')
  @CacheScope('public', { tags: (req) => bad[(req.params?.kind ?? '') as keyof typeof bad](req) })
  badTags(): { n: number } {
    return { n: ++served };
  }
}

describe('@CacheScope tags computed from the request', () => {
  let app: INestApplication;
  let base: string;
  const logs = new CapturedLogs();

  beforeAll(async () => {
    const mod = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { url: testUrl() }, cache: { namespace: NS } })],
      controllers: [Routes],
    })
      .setLogger(logs)
      .compile();
    app = mod.createNestApplication({ logger: logs });
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
  });
  afterAll(async () => app.close());

  const get = async (path: string) => {
    const r = await fetch(base + path);
    return { status: r.status, cache: r.headers.get('x-cache'), body: (await r.json()) as { n: number } };
  };

  it('a good tag function tags the entry: invalidateTag of that tag drops that page only', async () => {
    expect((await get('/good/1')).cache).toBe('MISS');
    expect((await get('/good/2')).cache).toBe('MISS');
    expect((await get('/good/1')).cache).toBe('HIT');
    await app.get(CacheService).invalidateTag('item:1');
    expect((await get('/good/1')).cache).toBe('MISS');
    expect((await get('/good/2')).cache).toBe('HIT');
  });

  it.each([
    ['throws', '/bad/throws/1', 'no product id'],
    ['returns numbers', '/bad/numbers/1', 'EMQ_BAD_NAME'],
    ['returns a string', '/bad/string/1', 'EMQ_BAD_OPTION'],
    ['returns a tag with a space', '/bad/spaces/7', 'EMQ_BAD_NAME'],
    ['returns undefined', '/bad/undefined/1', 'EMQ_BAD_OPTION'],
  ])('a tag function that %s: 200, served uncached each time, the error logged', async (_label, path, cause) => {
    const before = logs.find('error', '@CacheScope tags').length;
    const bypasses = app.get(CacheService).stats().bypasses;
    const a = await get(path);
    const b = await get(path);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect([a.cache, b.cache]).toEqual(['BYPASS', 'BYPASS']);
    expect(b.body.n).toBe(a.body.n + 1);
    const lines = logs.find('error', '@CacheScope tags').slice(before);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain('Routes.badTags');
    expect(lines[0]).toContain(cause);
    expect(app.get(CacheService).stats().bypasses).toBe(bypasses + 2);
  });

  it('fixed tags are checked when the class is defined', () => {
    expect(() => CacheScope('public', { tags: ['has space'] })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    expect(() => CacheScope('public', { tags: 'x' as unknown as readonly string[] })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
  });
});
