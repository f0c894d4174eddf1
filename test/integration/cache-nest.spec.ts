import 'reflect-metadata';
import { Controller, Get, Injectable, Post, UseInterceptors, type INestApplication, type NestMiddleware } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { CacheEvict, CacheInterceptor, CacheScope, Cached, EchoMqModule } from '../../src/index.js';
import { randomQueue, testUrl } from '../helpers/valkey.js';

const NS = randomQueue('http');
let served = 0;
let slowRuns = 0;

/** Stands in for an authentication guard: trusts an `x-user` header (test only). */
class FakeAuth implements NestMiddleware {
  use(req: { headers: Record<string, string | undefined>; user?: { id: string } }, _res: unknown, next: () => void): void {
    const id = req.headers['x-user'];
    if (id) req.user = { id };
    next();
  }
}

@Controller()
@UseInterceptors(CacheInterceptor)
class Routes {
  @Get('me')
  @CacheScope('user', { namespace: NS, ttlMs: 60_000 })
  me(): { n: number } {
    return { n: ++served };
  }

  @Get('board')
  @CacheScope('public', { namespace: NS, ttlMs: 60_000 })
  async board(): Promise<{ n: number }> {
    slowRuns++;
    await new Promise((r) => setTimeout(r, 100));
    return { n: ++served };
  }

  @Get('plain')
  plain(): { n: number } {
    return { n: ++served };
  }

  @Post('board')
  post(): { n: number } {
    return { n: ++served };
  }
}

let loads = 0;
@Injectable()
class Positions {
  @Cached({ scope: (account: string) => account, key: (account: string) => `positions:${account}`, namespace: NS, tags: ['positions'] })
  async of(account: string): Promise<{ account: string; load: number }> {
    return { account, load: ++loads };
  }

  @CacheEvict({ namespace: NS, tags: ['positions'] })
  async settle(): Promise<string> {
    return 'settled';
  }
}

describe('CacheInterceptor, @Cached and @CacheEvict', () => {
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    const mod = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { url: testUrl() } })],
      controllers: [Routes],
      providers: [Positions],
    }).compile();
    app = mod.createNestApplication({ logger: false });
    app.use((req: never, res: never, next: () => void) => new FakeAuth().use(req, res, next));
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
  });
  afterAll(async () => app.close());

  const get = async (path: string, user?: string) => {
    const r = await fetch(base + path, { headers: user ? { 'x-user': user } : {} });
    return { status: r.status, cache: r.headers.get('x-cache'), body: (await r.json()) as { n: number } };
  };

  it("never serves one user's response to another on a per-user route", async () => {
    const a1 = await get('/me', 'alice');
    const a2 = await get('/me', 'alice');
    const b1 = await get('/me', 'bob');
    expect([a1.cache, a2.cache, b1.cache]).toEqual(['MISS', 'HIT', 'MISS']);
    expect(a2.body).toEqual(a1.body);
    expect(b1.body).not.toEqual(a1.body);
    // Without an authenticated user a per-user route is not cached at all.
    const anon = await get('/me');
    expect(anon.cache).toBeNull();
  });

  it('caches a public route once for a herd, and passes non-GET and unscoped routes through', async () => {
    slowRuns = 0;
    const herd = await Promise.all(Array.from({ length: 30 }, () => get('/board')));
    expect(slowRuns).toBe(1);
    expect(new Set(herd.map((r) => r.body.n)).size).toBe(1);
    expect(herd.filter((r) => r.cache === 'MISS').length).toBe(1);
    const post = await fetch(base + '/board', { method: 'POST' });
    expect(post.headers.get('x-cache')).toBeNull();
    expect((await get('/plain')).cache).toBeNull();
  });

  it('@Cached serves a provider method from the cache per owner, @CacheEvict invalidates its tag', async () => {
    const positions = app.get(Positions);
    const first = await positions.of('alice');
    expect(await positions.of('alice')).toEqual(first);
    expect((await positions.of('bob')).account).toBe('bob');
    expect(await positions.settle()).toBe('settled');
    const after = await positions.of('alice');
    expect(after.load).toBeGreaterThan(first.load);
  });
});
