import 'reflect-metadata';
import { Inject, Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { CoordinationService, EchoMqModule, Leader, type LeaderTerm } from '../../src/index.js';
import { LeaderOrchestrator } from '../../src/nest/leader-orchestrator.js';
import { EchoMqTestingModule } from '../../src/testing.js';
import { killChildren, spawnFixture } from '../helpers/child.js';
import { CapturedLogs } from '../helpers/nest.js';
import { eventually, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

const TTL = 1000;
const WHO = 'WHO';

/** One win of a role: which app, the term's token, and when its signal aborted (if it did). */
interface Win {
  readonly who: string;
  readonly token: bigint;
  readonly at: number;
  lostAt?: number;
}

const waitForAbort = (term: LeaderTerm): Promise<void> =>
  new Promise((resolve) => {
    if (term.signal.aborted) resolve();
    else term.signal.addEventListener('abort', () => resolve(), { once: true });
  });

const SHARED = randomQueue('role');
const sharedWins: Win[] = [];

@Injectable()
class SharedRole {
  constructor(@Inject(WHO) private readonly who: string) {}

  @Leader(SHARED, { ttlMs: TTL })
  async lead(term: LeaderTerm): Promise<void> {
    const win: Win = { who: this.who, token: term.token, at: Date.now() };
    sharedWins.push(win);
    await waitForAbort(term);
    win.lostAt = Date.now();
  }
}

const KILLED = randomQueue('role');
const killedWins: Win[] = [];

@Injectable()
class KilledRole {
  @Leader(KILLED, { ttlMs: TTL })
  async lead(term: LeaderTerm): Promise<void> {
    killedWins.push({ who: 'parent', token: term.token, at: Date.now() });
    await waitForAbort(term);
  }
}

const PAUSED = randomQueue('role');
const pausedWins: Win[] = [];

@Injectable()
class PausedRole {
  @Leader(PAUSED, { ttlMs: TTL })
  async lead(term: LeaderTerm): Promise<void> {
    const win: Win = { who: 'parent', token: term.token, at: Date.now() };
    pausedWins.push(win);
    await waitForAbort(term);
    win.lostAt = Date.now();
  }
}

const THROWING = randomQueue('role');
const throwingCalls: bigint[] = [];

@Injectable()
class ThrowingRole {
  @Leader(THROWING, { ttlMs: TTL })
  async lead(term: LeaderTerm): Promise<void> {
    throwingCalls.push(term.token);
    if (throwingCalls.length === 1) throw new Error('boom\u001b[31m\nsecond line');
    await waitForAbort(term);
  }
}

const TESTING = randomQueue('role');
const testingTerms: bigint[] = [];

@Injectable()
class TestingRole {
  @Leader(TESTING, { ttlMs: TTL })
  async lead(term: LeaderTerm): Promise<void> {
    testingTerms.push(term.token);
  }
}

const IDLE = randomQueue('role');
let idleCalls = 0;

@Injectable()
class IdleRole {
  @Leader(IDLE, { ttlMs: TTL })
  async lead(): Promise<void> {
    idleCalls++;
  }
}

const TWICE = randomQueue('role');

@Injectable()
class TwiceA {
  @Leader(TWICE)
  async lead(): Promise<void> {}
}

@Injectable()
class TwiceB {
  @Leader(TWICE)
  async lead(): Promise<void> {}
}

/** Every app booted (closed in afterAll, a failed init's too, unless a test closed it). */
const apps: INestApplication[] = [];

async function boot(who: string, providers: unknown[], logs?: CapturedLogs): Promise<INestApplication> {
  const builder = Test.createTestingModule({
    imports: [EchoMqModule.forRoot({ connection: { url: testUrl() }, shutdownTimeoutMs: 2000 })],
    providers: [{ provide: WHO, useValue: who }, ...(providers as never[])],
  });
  if (logs) builder.setLogger(logs);
  const app = (await builder.compile()).createNestApplication({ logger: logs ?? false });
  apps.push(app);
  await app.init();
  return app;
}

const leaseKey = (role: string): string => `emq:{co:${role}}:lease`;

describe('@Leader', () => {
  const raw = rawClient();
  const roles = [SHARED, KILLED, PAUSED, THROWING, TESTING, IDLE, TWICE];

  afterAll(async () => {
    await killChildren();
    await Promise.all(apps.map((a) => a.close().catch(() => undefined)));
    await raw.del(...roles.map(leaseKey));
    raw.disconnect();
  });

  it('runs a role in exactly one of two apps, and hands it over within ttl + 1 s when the leader closes', async () => {
    const a = await boot('a', [SharedRole]);
    const b = await boot('b', [SharedRole]);
    await eventually(() => sharedWins.length === 1, 5000, 'a leader');
    // Four renewal periods later the same term still runs and nobody else ran the role.
    await new Promise((r) => setTimeout(r, 4 * TTL));
    expect(sharedWins).toHaveLength(1);
    const first = sharedWins[0]!;
    expect(first.lostAt).toBeUndefined();
    const leader = first.who === 'a' ? a : b;
    const follower = first.who === 'a' ? b : a;
    expect(leader.get(LeaderOrchestrator).campaigns.map((e) => e.isLeader())).toEqual([true]);
    expect(follower.get(LeaderOrchestrator).campaigns.map((e) => e.isLeader())).toEqual([false]);
    expect(await raw.hget(leaseKey(SHARED), 'token')).toBe(first.token.toString());

    const closing = Date.now();
    await leader.close();
    apps.splice(apps.indexOf(leader), 1);
    expect(first.lostAt).toBeDefined();
    await eventually(() => sharedWins.length === 2, TTL + 1000, 'the hand-over');
    const second = sharedWins[1]!;
    expect(second.who).toBe(first.who === 'a' ? 'b' : 'a');
    expect(second.token).toBeGreaterThan(first.token);
    expect(second.at - closing).toBeLessThan(TTL + 1000);
    // The closed app released its lease: the fence is the new term's token.
    expect(await raw.hget(leaseKey(SHARED), 'fence')).toBe(second.token.toString());
  }, 30_000);

  it('hands the role over within ttl + 1 s after its leader process is SIGKILLed', async () => {
    const child = spawnFixture('leader-child', [testUrl(), KILLED, String(TTL)]);
    const [, token] = await child.waitForLine(/^LEADS (\d+)$/, 20_000);
    await boot('parent', [KilledRole]);
    await new Promise((r) => setTimeout(r, 2 * TTL));
    expect(killedWins).toHaveLength(0); // the child leads; the parent only campaigns

    const killed = Date.now();
    child.signal('SIGKILL');
    await child.exited;
    await eventually(() => killedWins.length === 1, TTL + 1000, 'the hand-over after SIGKILL');
    expect(killedWins[0]!.at - killed).toBeLessThan(TTL + 1000);
    expect(killedWins[0]!.token).toBeGreaterThan(BigInt(token!));
  }, 40_000);

  it('takes the role from a leader SIGSTOPped past its ttl; resumed, the old leader sees its term lost and stays a candidate', async () => {
    const child = spawnFixture('leader-child', [testUrl(), PAUSED, String(TTL)]);
    const [, token] = await child.waitForLine(/^LEADS (\d+)$/, 20_000);
    await boot('parent', [PausedRole]);
    child.signal('SIGSTOP');
    const stopped = Date.now();
    await eventually(() => pausedWins.length === 1, TTL + 1000, 'the hand-over from the stopped leader');
    const win = pausedWins[0]!;
    expect(win.at - stopped).toBeLessThan(TTL + 1000);
    expect(win.token).toBeGreaterThan(BigInt(token!));
    await new Promise((r) => setTimeout(r, TTL));
    child.signal('SIGCONT');
    // Its local deadline passed while it was stopped: the old term's signal aborts at once.
    await child.waitForLine(new RegExp(`^LOST ${token}$`), TTL);
    await new Promise((r) => setTimeout(r, 2 * TTL));
    expect(child.lines.filter((l) => l.startsWith('LEADS'))).toEqual([`LEADS ${token}`]);
    expect(win.lostAt).toBeUndefined();
    expect(pausedWins).toHaveLength(1);
    expect(await raw.hget(leaseKey(PAUSED), 'token')).toBe(win.token.toString());
  }, 40_000);

  it('logs a method that throws, resigns its term and keeps campaigning', async () => {
    const logs = new CapturedLogs();
    const app = await boot('solo', [ThrowingRole], logs);
    await eventually(() => throwingCalls.length === 2, 5000, 'a second term after the throw');
    expect(throwingCalls[1]!).toBeGreaterThan(throwingCalls[0]!);
    const errors = logs.find('error', `leader of "${THROWING}", threw`);
    expect(errors).toHaveLength(1);
    // One log line: the newline and the escape sequence are shown escaped.
    expect(errors[0]).toContain('boom\\x1b[31m\\nsecond line');
    expect(errors[0]).not.toMatch(/[\n\u001b]/);
    expect(app.get(LeaderOrchestrator).campaigns[0]!.isLeader()).toBe(true);
  }, 20_000);

  it('releases what the app holds through CoordinationService when it closes', async () => {
    const app = await boot('holder', []);
    const name = randomQueue('lease');
    roles.push(name);
    const lease = await app.get(CoordinationService).tryAcquire(name, { ttlMs: 60_000 });
    expect(lease).not.toBeNull();
    expect(await raw.hget(leaseKey(name), 'owner')).toBe(lease!.owner);
    await app.close();
    apps.splice(apps.indexOf(app), 1);
    expect(lease!.signal.aborted).toBe(true);
    expect(await raw.hget(leaseKey(name), 'owner')).toBe('');
    expect(await raw.hget(leaseKey(name), 'exp')).toBe('0');
  });

  it('is provided by EchoMqTestingModule too: @Leader runs there, and closing releases the role', async () => {
    const mod = await Test.createTestingModule({
      imports: [EchoMqTestingModule.forRoot({ connection: { url: testUrl() } })],
      providers: [{ provide: WHO, useValue: 'testing' }, TestingRole],
    }).compile();
    const app = mod.createNestApplication({ logger: false });
    apps.push(app);
    await app.init();
    const term = await app.get(LeaderOrchestrator).campaigns[0]!.elected();
    await eventually(() => testingTerms.length === 1, 5000, 'the method called');
    expect(testingTerms[0]).toBe(term.token);
    // The method returned at once: the term is kept (renewed past its ttl) until shutdown.
    await new Promise((r) => setTimeout(r, 1.5 * TTL));
    expect(app.get(LeaderOrchestrator).campaigns[0]!.isLeader()).toBe(true);
    expect(term.signal.aborted).toBe(false);
    expect(testingTerms).toHaveLength(1);
    expect((await app.get(CoordinationService).read(TESTING)).owner).toBe(app.get(CoordinationService).owner);
    await app.close();
    apps.splice(apps.indexOf(app), 1);
    expect(term.signal.aborted).toBe(true);
    expect(await raw.hget(leaseKey(TESTING), 'owner')).toBe('');
  });

  it('campaigns for nothing with consumers: false', async () => {
    const mod = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { url: testUrl() }, consumers: false })],
      providers: [IdleRole],
    }).compile();
    const app = mod.createNestApplication({ logger: false });
    apps.push(app);
    await app.init();
    expect(app.get(LeaderOrchestrator).campaigns).toHaveLength(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(await raw.exists(leaseKey(IDLE))).toBe(0);
    expect(idleCalls).toBe(0);
  });

  it('refuses two @Leader methods on one role at boot, and bad roles and options when decorated', async () => {
    await expect(boot('twice', [TwiceA, TwiceB])).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION', message: expect.stringContaining(`leader role "${TWICE}"`) });
    const decorate = (role: string, options: object) => () => Leader(role, options as never);
    for (const r of ['', 'a b', '{x}', 'x'.repeat(101), 'a\nb', '..']) expect(decorate(r, {})).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    for (const o of [{ ttl: 1000 }, { ttlMs: 99 }, { ttlMs: 3_600_001 }, { ttlMs: 1.5 }, { ttlMs: '1000' }, null, []]) {
      expect(decorate('fine', o as object)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    }
    expect(await raw.exists(leaseKey(TWICE))).toBe(0);
  });
});
