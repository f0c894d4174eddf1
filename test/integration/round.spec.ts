import { EchoMqError } from '../../src/core/errors.js';
import { queueKeys } from '../../src/core/keys.js';
import { roundCall, runRound } from '../../src/core/wire/round.js';
import { scripts } from '../../src/core/scripts.js';
import { calls, wire, type ClaimReply } from '../../src/core/wire/queue.js';
import { startConsumer } from '../helpers/consumers.js';
import { queueFixture } from '../helpers/queue-fixture.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

describe('round.lua through the client (complete + claim in one call)', () => {
  const f = queueFixture();

  /** A queue with jobs a and b enqueued and a claimed: returns a's claim and the keys. */
  async function oneHeld() {
    const q = randomQueue('round');
    const k = queueKeys(q);
    const a = await f.queues.enqueue(q, { n: 1 });
    const b = await f.queues.enqueue(q, { n: 2 });
    const held = (await wire.claim(f.conn.scriptClient, k, 1, 30000)).jobs[0];
    expect(held.id).toBe(a);
    return { q, k, a, b, held };
  }

  it('settles both parts from one reply: the completion done, the next job claimed', async () => {
    const { k, a, b, held } = await oneHeld();
    const r = await runRound<number[], ClaimReply>(f.conn.scriptClient, calls.complete(k, 1000, [{ id: a, token: held.token, result: '{"ok":1}' }]), calls.claim(k, 1, 30000));
    expect(r.complete).toEqual({ status: 'fulfilled', value: [1] });
    expect(r.claim?.status === 'fulfilled' && r.claim.value.jobs.map((j) => j.id)).toEqual([b]);
    expect(await f.raw.hget(k.claimedRow(a), 'status')).toBe('done');
    expect(await f.raw.hget(k.claimedRow(b), 'status')).toBe('active');
  });

  it('a refused complete part is a typed error of that part only; the claim part still claims', async () => {
    const { k, a, b } = await oneHeld();
    const r = await runRound<number[], ClaimReply>(f.conn.scriptClient, calls.complete(k, 1000, [{ id: a, token: 'x', result: '' }]), calls.claim(k, 1, 30000));
    expect(r.complete?.status).toBe('rejected');
    const reason = r.complete?.status === 'rejected' ? (r.complete.reason as EchoMqError) : undefined;
    expect(reason).toBeInstanceOf(EchoMqError);
    expect(reason?.code).toBe('EMQ_BAD_ARG');
    expect(r.claim?.status === 'fulfilled' && r.claim.value.jobs.map((j) => j.id)).toEqual([b]);
    expect(await f.raw.hget(k.claimedRow(a), 'status')).toBe('active');
  });

  it('a refused claim part leaves the completion done and is a typed error of its own', async () => {
    const { k, a, b, held } = await oneHeld();
    const r = await runRound<number[], ClaimReply>(f.conn.scriptClient, calls.complete(k, 1000, [{ id: a, token: held.token, result: '' }]), calls.claim(k, 1, 0));
    expect(r.complete).toEqual({ status: 'fulfilled', value: [1] });
    expect(r.claim?.status === 'rejected' && (r.claim.reason as EchoMqError).code).toBe('EMQ_BAD_ARG');
    expect(await f.raw.lrange(k.pending, 0, -1)).toEqual([b]);
  });

  /** Script-called commands since the last CONFIG RESETSTAT (INFO commandstats; the script calls and INFO itself left out). */
  async function commandCounts(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const line of (await f.raw.info('commandstats')).split('\r\n')) {
      const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
      if (m && !/^(eval|evalsha|info|config|script)/.test(m[1])) out[m[1]] = Number(m[2]);
    }
    return out;
  }

  it('reads the meta and the clock once per round call: the two scripts called apart, less one HMGET and one TIME', async () => {
    const apart = await oneHeld();
    const together = await oneHeld();
    await f.raw.config('RESETSTAT');
    await wire.complete(f.conn.scriptClient, apart.k, 1000, [{ id: apart.a, token: apart.held.token, result: '' }]);
    await wire.claim(f.conn.scriptClient, apart.k, 1, 30000);
    const separate = await commandCounts();
    await f.raw.config('RESETSTAT');
    const r = await runRound<number[], ClaimReply>(f.conn.scriptClient, calls.complete(together.k, 1000, [{ id: together.a, token: together.held.token, result: '' }]), calls.claim(together.k, 1, 30000));
    expect(r.claim?.status === 'fulfilled' && r.claim.value.jobs.map((j) => j.id)).toEqual([together.b]);
    const round = await commandCounts();
    expect(separate.time).toBe(2);
    expect(round.time).toBe(1);
    expect(round).toEqual({ ...separate, hmget: separate.hmget - 1, time: 1 });
  });

  it('refuses to compose anything but complete + claim', () => {
    const k = queueKeys('x');
    expect(() => roundCall(calls.claim(k, 1, 1000), calls.claim(k, 1, 1000))).toThrow(/complete \+ claim/);
  });

  it('the consumer completes and claims through round.lua (loaded by its first EVALSHA falling back to EVAL)', async () => {
    const q = randomQueue('round');
    await f.raw.script('FLUSH');
    for (let i = 0; i < 20; i++) await f.queues.enqueue(q, { i });
    let ran = 0;
    const { consumer, log } = await startConsumer(f.conn, q, () => { ran++; return null; }, { concurrency: 1, prefetch: 1 });
    f.consumers.push(consumer);
    await eventually(() => ran === 20, 10_000, 'the 20 jobs to run');
    await eventually(async () => (await f.raw.zcard(queueKeys(q).done)) === 20, 10_000, 'the 20 completions');
    const [roundLoaded] = (await f.raw.script('EXISTS', scripts().get('round')!.sha)) as number[];
    expect(roundLoaded).toBe(1);
    expect(log.warnings).toEqual([]);
  });
});
