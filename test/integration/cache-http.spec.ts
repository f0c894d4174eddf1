import 'reflect-metadata';
import { Controller, Get, Header, Injectable, Query, UseInterceptors, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { CacheInterceptor, CacheScope, Cached, EchoMqModule } from '../../src/index.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { randomQueue } from '../helpers/valkey.js';

// Issue 7 #15: a cache must never turn a working endpoint into an error.
const NS = randomQueue('http');
let served = 0;

@Controller()
@UseInterceptors(CacheInterceptor)
class Routes {
  @Get('echo')
  @CacheScope('public', { namespace: NS, ttlMs: 60_000 })
  echo(@Query() q: Record<string, string>): { n: number; q: Record<string, string> } {
    return { n: ++served, q };
  }

  @Get('me')
  @CacheScope('user', { namespace: NS, ttlMs: 60_000 })
  me(): { n: number } {
    return { n: ++served };
  }

  @Get('no-store')
  @Header('Cache-Control', 'no-store')
  @CacheScope('public', { namespace: NS, ttlMs: 60_000 })
  noStore(): { n: number } {
    return { n: ++served };
  }

  @Get('private')
  @Header('Cache-Control', 'private, max-age=60')
  @CacheScope('public', { namespace: NS, ttlMs: 60_000 })
  personal(): { n: number } {
    return { n: ++served };
  }

  @Get('mine-private')
  @Header('Cache-Control', 'private, max-age=60')
  @CacheScope('user', { namespace: NS, ttlMs: 60_000 })
  minePrivate(): { n: number } {
    return { n: ++served };
  }
}

let loads = 0;
@Injectable()
class Prices {
  @Cached({ scope: 'public', key: (sym: string) => `price:${sym}`, namespace: NS })
  async of(sym: string): Promise<{ sym: string; load: number }> {
    return { sym, load: ++loads };
  }
}

describe('CacheInterceptor never turns a working endpoint into an error', () => {
  let valkey: EmbeddedValkey;
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    valkey = await startEmbeddedValkey();
    const mod = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { url: valkey.url } })],
      controllers: [Routes],
      providers: [Prices],
    }).compile();
    app = mod.createNestApplication({ logger: false });
    app.use((req: { headers: Record<string, string | undefined>; user?: { id: string } }, _res: unknown, next: () => void) => {
      const id = req.headers['x-user'];
      if (id) req.user = { id };
      next();
    });
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
  }, 30_000);
  afterAll(async () => {
    await app.close();
    await valkey.stop();
  }, 30_000);

  const get = async (path: string, user?: string) => {
    const r = await fetch(base + path, { headers: user ? { 'x-user': user } : {} });
    const text = await r.text();
    return { status: r.status, cache: r.headers.get('x-cache'), body: r.status === 200 ? (JSON.parse(text) as { n: number }) : text };
  };

  it.each([
    ['braces in the query', '/echo?q={x}'],
    ['a URL over 512 bytes', `/echo?pad=${'x'.repeat(600)}`],
    ['spaces and unicode', '/echo?q=a%20b&r=%C3%A9'],
  ])('%s: 200, then a HIT', async (_label, path) => {
    const a = await get(path);
    const b = await get(path);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect([a.cache, b.cache]).toEqual(['MISS', 'HIT']);
    expect(b.body).toEqual(a.body);
  });

  it('the same query in another order is the same cache entry; another query is not', async () => {
    const a = await get('/echo?x=1&y=2');
    const b = await get('/echo?y=2&x=1');
    const c = await get('/echo?x=1&y=3');
    expect([a.cache, b.cache, c.cache]).toEqual(['MISS', 'HIT', 'MISS']);
  });

  it('a user id with a space: 200, then a HIT, never shared with another user', async () => {
    const a = await get('/me', 'ann smith');
    const b = await get('/me', 'ann smith');
    const c = await get('/me', 'ann');
    expect([a.status, b.status, c.status]).toEqual([200, 200, 200]);
    expect([a.cache, b.cache, c.cache]).toEqual(['MISS', 'HIT', 'MISS']);
    expect(c.body).not.toEqual(a.body);
  });

  it('does not cache Cache-Control: no-store, nor private on a public route (private is kept per user)', async () => {
    const ns1 = await get('/no-store');
    const ns2 = await get('/no-store');
    expect([ns1.status, ns2.status]).toEqual([200, 200]);
    expect([ns1.cache, ns2.cache]).toEqual(['MISS', 'MISS']);
    expect(ns2.body).not.toEqual(ns1.body);
    const p1 = await get('/private');
    const p2 = await get('/private');
    expect([p1.cache, p2.cache]).toEqual(['MISS', 'MISS']);
    expect(p2.body).not.toEqual(p1.body);
    const m1 = await get('/mine-private', 'bo');
    const m2 = await get('/mine-private', 'bo');
    expect([m1.cache, m2.cache]).toEqual(['MISS', 'HIT']);
  });

  it('while Valkey is down, cold URLs and @Cached methods answer quickly, uncached', async () => {
    const prices = app.get(Prices);
    expect((await prices.of('AAA')).sym).toBe('AAA');
    await valkey.stop();
    const t0 = Date.now();
    const first = await get('/echo?cold=1');
    const firstMs = Date.now() - t0;
    expect(first.status).toBe(200);
    const t1 = Date.now();
    const second = await get('/echo?cold=2');
    const secondMs = Date.now() - t1;
    expect(second.status).toBe(200);
    expect(secondMs).toBeLessThan(1000);
    expect(firstMs).toBeLessThan(3000);
    const before = loads;
    const t2 = Date.now();
    expect((await prices.of('BBB')).sym).toBe('BBB');
    expect(Date.now() - t2).toBeLessThan(1000);
    expect(loads).toBe(before + 1);
  }, 20_000);
});
