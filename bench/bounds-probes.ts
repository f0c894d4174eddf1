/**
 * The measurements behind `docs/bounds.md` (`bench/bounds.ts`): what one round trip costs on this
 * machine with nothing else in it, and what a script call costs Valkey when it comes alone after an
 * idle gap (as at light load) against back to back (as in a busy loop).
 */
import { Redis } from 'iovalkey';
import { EchoMqConnection, PROTOCOL_VERSION, parkSpot, queueKeys, scripts, type ScriptName } from '@echomq/nestjs/protocol';
import { randomQueue, sleep } from './common.js';

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** µs per call of `call`, `n` calls one after another (each awaited), median of `blocks` blocks. */
async function perCall(call: () => Promise<unknown>, n: number, blocks: number): Promise<number> {
  for (let i = 0; i < n; i++) await call(); // warm-up as long as one timed block
  const out: number[] = [];
  for (let b = 0; b < blocks; b++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await call();
    out.push(((performance.now() - t0) * 1000) / n);
  }
  return median(out);
}

/** One client round trip: PING, and an EVALSHA of `return 1` carrying a consumer round's 33 arguments. */
export interface RoundTrip {
  readonly pingUs: number;
  readonly emptyScriptUs: number;
}

/** Round trips from this process on a fresh connection (iovalkey, as EchoMQ sends them). */
export async function roundTrip(url: string): Promise<RoundTrip> {
  const c = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const sha = (await c.script('LOAD', 'return 1')) as string;
    const keys = Array.from({ length: 18 }, (_, i) => `emq:{bounds}:key${i}`);
    const args = Array.from({ length: 15 }, (_, i) => `arg${i}`);
    const pingUs = await perCall(() => c.ping(), 3000, 3);
    const emptyScriptUs = await perCall(() => c.evalsha(sha, keys.length, ...keys, ...args), 3000, 3);
    return { pingUs, emptyScriptUs };
  } finally {
    c.disconnect();
  }
}

/** Valkey's µs per call of one script, alone after a 2 ms gap and back to back. */
export interface ScriptCost {
  readonly what: string;
  readonly idleUs: number;
  readonly busyUs: number;
}

/** `INFO commandstats` µs per EVALSHA since the last reset. */
async function evalshaUs(c: Redis): Promise<number> {
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await c.info('commandstats'));
  return m ? Number(m[2]) / Number(m[1]) : NaN;
}

/** Runs `call` `n` times, `gapMs` apart (0: back to back), and reads Valkey's µs per call; median of 3 blocks. */
async function scriptUs(c: Redis, call: () => Promise<unknown>, before: () => Promise<void>, n: number, gapMs: number): Promise<number> {
  const out: number[] = [];
  for (let b = 0; b < 3; b++) {
    await before();
    await c.config('RESETSTAT');
    for (let i = 0; i < n; i++) {
      if (gapMs > 0) await sleep(gapMs);
      await call();
    }
    out.push(await evalshaUs(c));
  }
  return median(out);
}

/**
 * The script calls on the light-load path, idle and busy: an empty script with enqueue's keys, a
 * single plain enqueue (enqueue.lua's compact form) with nobody parked, the same enqueue leasing
 * its job to a parked consumer (docs/protocol.md §5, "Parked consumers": the registration is
 * written by a plain ZADD after each call, outside the figures), and a claim of one pending job
 * (claim.lua, as a consumer claims when woken by `wake`).
 */
export async function scriptCosts(url: string, n = 300): Promise<ScriptCost[]> {
  const c = new Redis(url, { maxRetriesPerRequest: 1 });
  const conn = new EchoMqConnection({ url });
  await conn.open();
  await conn.ids.ready();
  try {
    const all = scripts();
    const sha = (name: ScriptName): string => all.get(name)!.sha;
    for (const name of ['enqueue', 'claim'] as const) await c.script('LOAD', all.get(name)!.source);
    const empty = (await c.script('LOAD', 'return 1')) as string;
    const k = queueKeys(randomQueue('bounds'));
    const enqKeys = [k.meta, k.pending, k.scheduled, k.wake, k.data, k.opts, k.events];
    const claimKeys = [k.meta, k.pending, k.scheduled, k.active, k.wake, k.data, k.opts, k.jobPrefix, k.events];
    const payload = JSON.stringify({ i: 1, s: 'x'.repeat(80) });
    const enqueue = () => c.evalsha(sha('enqueue'), enqKeys.length, ...enqKeys, PROTOCOL_VERSION, 524288, 1, '', conn.ids.next('job'), payload);
    const claim = () => c.evalsha(sha('claim'), claimKeys.length, ...claimKeys, PROTOCOL_VERSION, 1, 30000, 1000);
    const nothing = async () => undefined;
    // A parked registration for the next call, and the inbox of the last one emptied.
    const spot = parkSpot(k, 'bounds1', 30000);
    const repark = async () => {
      await c.pipeline().zadd(spot.parked, '7258118400000', spot.member).del(spot.inbox).exec();
    };
    const leased = async () => {
      const r = await enqueue();
      await repark();
      return r;
    };
    // Before each block of claims: exactly n pending jobs, enqueued in one untimed call each.
    const fill = async () => {
      await c.flushall();
      for (let i = 0; i < n; i++) await enqueue();
    };
    const rows: [string, () => Promise<unknown>, () => Promise<void>][] = [
      ['empty script (enqueue keys)', () => c.evalsha(empty, enqKeys.length, ...enqKeys, PROTOCOL_VERSION, 524288, 1, ''), nothing],
      ['enqueue.lua, one plain job', enqueue, nothing],
      ['enqueue.lua, one plain job leased to a parked consumer', leased, async () => {
        await c.flushall(); // nothing pending, or nothing is leased
        await repark();
      }],
      ['claim.lua, one job', claim, fill],
    ];
    const out: ScriptCost[] = [];
    for (const [what, call, before] of rows) {
      out.push({ what, idleUs: await scriptUs(c, call, before, n, 2), busyUs: await scriptUs(c, call, before, n, 0) });
    }
    return out;
  } finally {
    await conn.close();
    c.disconnect();
  }
}
