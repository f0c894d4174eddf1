/**
 * Where one consumer round's Valkey time goes (`docs/bounds.md`): an instrumented copy of
 * round.lua (os.clock checkpoints at the start of the call, of each part, and before the reply)
 * runs the c1 `prefetch: 0` round (complete one job, claim the next) on a backlog, each call awaited
 * as the consumer awaits it. `INFO commandstats` splits the parts' time into the Valkey commands
 * they call and the Lua around them. The copy is loaded under its own SHA; lua/ is not touched.
 */
import { Redis } from 'iovalkey';
import { EchoMqConnection, calls, queueKeys, roundCall, scripts, wire, type WireClaim } from '@echomq/nestjs/protocol';
import { BUILTIN_DEFAULTS } from '@echomq/nestjs/unstable';
import { QueueService } from '@echomq/nestjs';
import { randomQueue } from './common.js';
import { parseInfo } from './probe.js';

/** µs per round (means over the timed calls). */
export interface RoundParts {
  readonly rounds: number;
  /** EVALSHA's µs per call as Valkey counts it (argument set-up, the script, the reply). */
  readonly evalshaUs: number;
  /** From the script's first line to the complete part's body (the driver's checks, the part tables). */
  readonly driverUs: number;
  readonly completeUs: number;
  /** The claim part, and the driver's reply encoding after it. */
  readonly claimUs: number;
  /** Of the parts, the time inside the Valkey commands they call (commandstats). */
  readonly commandsUs: number;
  readonly commandsPerRound: number;
  /** One checkpoint's own cost (os.clock is a system call), measured alone; already taken off the parts. */
  readonly markUs: number;
}

const MARK = '__T[#__T + 1] = math.floor(__c() * 1e7)';

/** round.lua with checkpoints; fails loudly when the build's layout (scripts/lua/build.ts) changed. */
function instrumented(source: string): string {
  const anchors = ['local function complete_part(KEYS, ARGV)\n', 'local function claim_part(KEYS, ARGV)\n'];
  // The shebang (`#!lua flags=…`) must stay the first line; the checkpoints go after it.
  const shebang = /^#!lua[^\n]*\n/.exec(source)?.[0] ?? '';
  let s = source.slice(shebang.length);
  for (const a of anchors) {
    if (!s.includes(a)) throw new Error(`round-parts: round.lua has no "${a.trim()}"`);
    s = s.replace(a, `${a}${MARK}\n`);
  }
  // The driver is the body of main; its last line answers both parts.
  const tail = /\nreturn out\nend\nreturn run\(main\)\s*$/;
  if (!tail.test(s)) throw new Error('round-parts: round.lua does not end in "return out", "end", "return run(main)"');
  s = s.replace(tail, `\n${MARK}\nout[3] = __T\nreturn out\nend\nreturn run(main)\n`);
  return `${shebang}local __T, __c = {}, os.clock\n${MARK}\n${s}`;
}

/** The commandstats µs and calls of every command but the ones named, and EVALSHA's µs per call. */
async function commandTotals(c: Redis, except: readonly string[]): Promise<{ us: number; calls: number; evalshaUs: number }> {
  let us = 0;
  let n = 0;
  let evalshaUs = NaN;
  for (const [key, value] of parseInfo(await c.info('commandstats'))) {
    if (!key.startsWith('cmdstat_')) continue;
    const name = key.slice('cmdstat_'.length);
    const calls = Number(/calls=(\d+)/.exec(value)?.[1] ?? 0);
    const usec = Number(/usec=(\d+)/.exec(value)?.[1] ?? 0);
    if (name === 'evalsha') evalshaUs = usec / calls;
    if (except.includes(name)) continue;
    us += usec;
    n += calls;
  }
  return { us, calls: n, evalshaUs };
}

/** Runs `rounds` instrumented rounds (after as many untimed) on a fresh queue of the Valkey at `url`. */
export async function roundParts(url: string, rounds = 3000): Promise<RoundParts> {
  const c = new Redis(url, { maxRetriesPerRequest: 1 });
  const conn = new EchoMqConnection({ url });
  await conn.open();
  try {
    const sha = (await c.script('LOAD', instrumented(scripts().get('round')!.source))) as string;
    const markSha = (await c.script('LOAD', `local c = os.clock; local a = c(); for i = 1, 1000 do c() end; return tostring((c() - a) * 1000)`)) as string;
    const svc = new QueueService(conn, BUILTIN_DEFAULTS);
    const queue = randomQueue('parts');
    const k = queueKeys(queue);
    const total = 2 * rounds + 1;
    for (let i = 0; i < total; i += 1000) {
      await svc.enqueueMany(queue, Array.from({ length: Math.min(1000, total - i) }, (_, j) => ({ payload: { i: i + j, s: 'x'.repeat(50) } })));
    }
    let job: WireClaim = (await wire.claim(conn.scriptClient, k, 1, 30_000)).jobs[0];
    const sums = [0, 0, 0];
    const one = async (): Promise<void> => {
      const rc = roundCall(calls.complete(k, 1000, [{ id: job.id, token: job.token, result: '' }]), calls.claim(k, 1, 30_000, 1000));
      const reply = (await c.evalsha(sha, rc.keys.length, ...rc.keys, ...rc.args)) as unknown[];
      const marks = (reply.pop() as (number | string)[]).map(Number);
      const parts = rc.parse(reply);
      if (parts.claim.status !== 'fulfilled' || parts.claim.value.jobs.length !== 1) throw new Error('round-parts: a round claimed nothing');
      job = parts.claim.value.jobs[0];
      for (let i = 1; i < 4; i++) sums[i - 1] += (marks[i] - marks[i - 1]) / 10;
    };
    for (let i = 0; i < rounds; i++) await one();
    sums.fill(0);
    await c.config('RESETSTAT');
    for (let i = 0; i < rounds; i++) await one();
    const t = await commandTotals(c, ['evalsha', 'config', 'info']);
    const markUs = Number(await c.evalsha(markSha, 0));
    const part = (i: number): number => sums[i] / rounds - markUs;
    return {
      rounds,
      evalshaUs: t.evalshaUs,
      driverUs: part(0),
      completeUs: part(1),
      claimUs: part(2),
      commandsUs: t.us / rounds,
      commandsPerRound: t.calls / rounds,
      markUs,
    };
  } finally {
    await conn.close();
    c.disconnect();
  }
}
