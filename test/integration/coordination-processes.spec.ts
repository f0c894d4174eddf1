/**
 * Coordination across real processes that stop, die, and a Valkey that restarts (issue 40):
 * fencing under SIGSTOP past the lease, leader hand-over after SIGKILL, and tokens across a
 * restart with and without persistence. Children: test/fixtures/coord-child.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'iovalkey';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { CoordinationService } from '../../src/index.js';
import { killChildren, spawnFixture, type ChildHandle } from '../helpers/child.js';
import { eventually, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The `LEADER <token> <ms>` lines of the children, as { child, token, at }, by time. */
function terms(kids: readonly ChildHandle[]): { child: number; token: bigint; at: number }[] {
  return kids
    .flatMap((k, child) => k.lines.flatMap((l) => {
      const m = /^LEADER (\d+) (\d+)$/.exec(l);
      return m ? [{ child, token: BigInt(m[1]), at: Number(m[2]) }] : [];
    }))
    .sort((a, b) => a.at - b.at);
}

async function stopAll(kids: readonly ChildHandle[]): Promise<void> {
  for (const k of kids) if (!k.hasExited()) k.send('stop');
  await Promise.race([Promise.all(kids.map((k) => k.exited)), sleep(5000)]);
}

describe('coordination across processes', () => {
  let raw: Redis;
  beforeAll(() => {
    raw = rawClient();
  });
  afterEach(async () => {
    await killChildren();
  });
  afterAll(async () => {
    raw.disconnect();
  });

  it.each(['naive', 'check'] as const)(
    'a holder SIGSTOPped past its lease never gets a write accepted after the next holder’s (%s signal)',
    async (style) => {
      const name = randomQueue('fence');
      const ttl = '1000';
      const a = spawnFixture('coord-child', [testUrl(), 'fence', name, ttl, '20', style]);
      const tokenA = BigInt((await a.waitForLine(/^HELD (\d+)$/))[1]);
      await eventually(() => a.lines.filter((l) => l === `ACT ${tokenA} ok`).length >= 5, 10_000, 'A acting');
      const b = spawnFixture('coord-child', [testUrl(), 'fence', name, ttl, '20', 'check']);
      await b.waitForLine(/^READY$/);
      a.signal('SIGSTOP');
      const stoppedAt = Date.now();
      await sleep(200); // what A wrote before the stop has reached the pipe
      const before = a.lines.length;
      const tokenB = BigInt((await b.waitForLine(/^HELD (\d+)$/, 10_000))[1]);
      const tookOver = Date.now() - stoppedAt;
      await eventually(() => b.lines.filter((l) => l === `ACT ${tokenB} ok`).length >= 5, 10_000, 'B acting');
      a.signal('SIGCONT');
      await a.waitForLine(new RegExp(`^LOST ${tokenA}$`), 10_000);
      await sleep(300);
      await stopAll([a, b]);

      expect(tokenB).toBeGreaterThan(tokenA);
      expect(tookOver).toBeGreaterThanOrEqual(600); // B waited for A's lease to lapse (ttl 1000, A renewed ≤ 333 ms before the stop)
      // The resource's view: every accepted write, in order. None carries a token lower than one accepted before it.
      const log = (await raw.lrange(`emq:{co:${name}}:log`, 0, -1)).map((e) => BigInt(e.split(' ')[0]));
      let highest = 0n;
      let lower = 0;
      for (const t of log) {
        if (t < highest) lower++;
        if (t > highest) highest = t;
      }
      expect(lower).toBe(0);
      const firstB = log.indexOf(tokenB);
      expect(firstB).toBeGreaterThan(0);
      expect(log.slice(firstB).includes(tokenA)).toBe(false);
      // A after its resume: it either acted and was refused as stale, or saw its signal aborted before acting.
      const after = a.lines.slice(before);
      const stale = after.filter((l) => l === `ACT ${tokenA} stale`).length;
      const lostAt = after.indexOf(`LOST ${tokenA}`);
      const sentAfterResume = after.slice(0, lostAt).filter((l) => l.startsWith(`ACT ${tokenA}`)).length;
      console.log(`coordination: SIGSTOP (${style}): B took over after ${tookOver} ms; ${log.length} writes accepted; A after resume: ${stale} refused as stale, ${sentAfterResume} sent before LOST`);
      if (style === 'check') expect({ stale, lostAt: lostAt >= 0 }).toEqual({ stale: 0, lostAt: true });
      else expect(stale > 0 || sentAfterResume === 0).toBe(true);
      expect(after.filter((l) => l === `ACT ${tokenA} ok`).length).toBeLessThanOrEqual(1); // at most the write in flight at the stop
      await raw.del(`emq:{co:${name}}:log`, `emq:{co:${name}}:fence`, `emq:{co:${name}}:lease`);
    },
    60_000,
  );

  it('hands leadership over within ttl + 1 s after the leader is SIGKILLed, with a greater token (3 rounds)', async () => {
    const role = randomQueue('role');
    const ttl = 2000;
    const args = [testUrl(), 'lead', role, String(ttl)];
    const kids: ChildHandle[] = [spawnFixture('coord-child', args)];
    await kids[0].waitForLine(/^LEADER /);
    const handovers: number[] = [];
    for (let round = 0; round < 3; round++) {
      kids.push(spawnFixture('coord-child', args));
      await kids[kids.length - 1].waitForLine(/^READY$/);
      await sleep(300 + Math.floor(Math.random() * 700)); // a random phase against the leader's renewals
      const leader = terms(kids).at(-1)!;
      const before = terms(kids).length;
      const killedAt = Date.now();
      kids[leader.child].signal('SIGKILL');
      await eventually(() => terms(kids).length > before, ttl + 5000, 'a new leader');
      const next = terms(kids).at(-1)!;
      expect(next.child).not.toBe(leader.child);
      expect(next.token).toBeGreaterThan(leader.token);
      handovers.push(next.at - killedAt);
    }
    console.log(`coordination: hand-over after SIGKILL, ttl ${ttl} ms: ${handovers.join(', ')} ms`);
    for (const h of handovers) expect(h).toBeLessThan(ttl + 1000);
    await stopAll(kids);
    await raw.del(`emq:{co:${role}}:lease`);
  }, 60_000);

  describe.each([
    ['with persistence (appendfsync always), down 0.3 s', true, 300],
    ['with persistence (appendfsync always), down 3 s (past the ttl)', true, 3000],
    ['without persistence, down 0.3 s', false, 300],
  ])('a Valkey restart %s', (_what, persist, downMs) => {
    let dir: string;
    let valkey: EmbeddedValkey;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'echomq-coord-'));
    });
    afterAll(async () => {
      await valkey?.stop();
      rmSync(dir, { recursive: true, force: true });
    });
    const args = (): string[] => (persist ? ['--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always'] : []);

    it('leaves one leader whose token never went back', async () => {
      valkey = await startEmbeddedValkey({ args: args() });
      const role = randomQueue('role');
      const ttl = 2000;
      const kids = [0, 1].map(() => spawnFixture('coord-child', [valkey.url, 'lead', role, String(ttl)]));
      await Promise.all(kids.map((k) => k.waitForLine(/^READY$/)));
      await eventually(() => terms(kids).length >= 1, 10_000, 'a first leader');
      const first = terms(kids)[0];
      await sleep(500);
      await valkey.stop();
      const downAt = Date.now();
      if (downMs > ttl) {
        // The leader cannot renew: its term ends at its local deadline, with the server still down.
        await kids[first.child].waitForLine(new RegExp(`^ENDED ${first.token}$`), ttl + 2000);
        const endedAfter = Date.now() - downAt;
        console.log(`coordination: Valkey down: the leader's term ended ${endedAfter} ms after the server stopped (ttl ${ttl})`);
        expect(endedAfter).toBeLessThan(ttl + 500);
      }
      await sleep(Math.max(0, downMs - (Date.now() - downAt)));
      valkey = await startEmbeddedValkey({ port: valkey.port, args: args() });
      // Settle: every term has ended or renewed against the restarted server.
      await sleep(ttl * 2 + 1000);
      const conn = new EchoMqConnection({ url: valkey.url });
      await conn.open();
      const coord = new CoordinationService(conn);
      try {
        const state = await coord.read(role);
        const all = terms(kids);
        // Terms in the order they began carry increasing tokens, across the restart.
        for (let i = 1; i < all.length; i++) expect(all[i].token).toBeGreaterThan(all[i - 1].token);
        expect(state.held).toBe(true);
        expect(state.token).toBe(all.at(-1)!.token);
        expect(state.token! >= first.token).toBe(true);
        // Exactly one child is in a term: the one whose last LEADER line holds the server's token.
        const inTerm = kids.filter((k) => {
          const marks = k.lines.filter((l) => /^(LEADER|ENDED) /.test(l));
          return marks.at(-1)?.startsWith('LEADER ') ?? false;
        });
        expect(inTerm.length).toBe(1);
        console.log(`coordination: restart ${_what}: terms ${all.map((t) => t.token).join(' → ')}`);
        // Lost with the data (the time floor gives a greater token), or ended by the outage: a new term.
        if (!persist || downMs > ttl) expect(all.length).toBeGreaterThan(1);
      } finally {
        await coord.close();
        await conn.close();
        await stopAll(kids);
      }
    }, 60_000);
  });
});
