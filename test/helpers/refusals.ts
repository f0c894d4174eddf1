import type { Redis } from 'iovalkey';
import { EchoMqError } from '../../src/index.js';
import { encodeBody, runScript, type ScriptClient, type ScriptName, type WireJob } from '../../src/protocol.js';

/** Runs `act`; resolves to the code of the EchoMqError it fails with, or to a description of what else happened. */
export const codeOf = (act: () => Promise<unknown> | unknown): Promise<string> =>
  Promise.resolve().then(act).then(
    (v) => `resolved to ${JSON.stringify(v)?.slice(0, 200)}`,
    (err: unknown) => (err instanceof EchoMqError ? err.code : `threw a non-EchoMqError: ${String(err)}`),
  );

/** Every key matching the pattern(s) with its DUMP (type, value) and whether it has a TTL. */
export async function snapshot(raw: Redis, patterns: string | string[]): Promise<Record<string, string>> {
  const keys: string[] = [];
  for (const pattern of ([] as string[]).concat(patterns)) {
    let cursor = '0';
    do {
      const [next, found] = await raw.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      keys.push(...found);
    } while (cursor !== '0');
  }
  const p = raw.pipeline();
  for (const k of keys) p.dumpBuffer(k).pttl(k);
  const replies = (await p.exec()) ?? [];
  const out: Record<string, string> = {};
  keys.forEach((k, i) => {
    const dump = replies[2 * i][1] as Buffer | null;
    out[k] = `${dump ? dump.toString('hex') : 'gone'} ttl=${(replies[2 * i + 1][1] as number) > 0}`;
  });
  return out;
}

/** `act` must fail with `code` and leave every key matching `pattern` (default: queue `q`'s) byte for byte as it was. */
export async function refusedUnchanged(raw: Redis, q: string, code: string, act: () => Promise<unknown>, pattern: string | string[] = `emq:{${q}}:*`): Promise<void> {
  await allRefusedUnchanged(raw, code, [act], pattern);
}

/**
 * Every one of `acts` must fail with `code`, and together they leave every key matching `pattern`
 * byte for byte as it was: one snapshot before and one after them all (a wide pattern over a
 * large keyspace costs a second or more per snapshot).
 */
export async function allRefusedUnchanged(raw: Redis, code: string, acts: readonly (() => Promise<unknown>)[], pattern: string | string[]): Promise<void> {
  const before = await snapshot(raw, pattern);
  const got: (string | undefined)[] = [];
  for (const act of acts) got.push(await codeOf(act));
  const after = await snapshot(raw, pattern);
  // A pattern wider than one queue also sees other suites' keys: one may expire or be deleted
  // meanwhile (or between SCAN and DUMP: "gone"), which is not a write of `act`. A new key, or a
  // changed one, still fails; under a one-queue pattern a vanished key fails too.
  if (!([] as string[]).concat(pattern).every((p) => p.startsWith('emq:{') && p.endsWith('}:*'))) {
    for (const [k, v] of Object.entries(before)) {
      if (v.startsWith('gone') || !(k in after) || after[k].startsWith('gone')) {
        delete before[k];
        delete after[k];
      }
    }
    for (const [k, v] of Object.entries(after)) if (v.startsWith('gone') && !(k in before)) delete after[k];
  }
  expect({ codes: got, keys: after }).toEqual({ codes: acts.map(() => code), keys: before });
}

/** The job id of a snowflake value (a well-formed 14-byte id). */
export const jobId = (n: bigint): string => 'job' + encodeBody(n);
/** A wire job with no delay, no run-at and the consumer's defaults. */
export const wireJob = (id: string, payload = '{}', over: Partial<WireJob> = {}): WireJob => ({ id, payload, delayMs: 0, runAtMs: 0, ...over });

/** KEYS and ARGV of one script call. */
export interface SentCall {
  keys: string[];
  args: (string | number)[];
}

/** The KEYS and ARGV a wire call would send, captured without running it: KEYS follow the current layout. */
export async function sent(call: (c: ScriptClient) => Promise<unknown>): Promise<SentCall> {
  let out: (string | number)[] = [0];
  const recorder: ScriptClient = {
    evalsha: async (_sha, ...rest) => ((out = rest), []),
    eval: async () => [],
    pipeline: () => {
      throw new Error('not used by single calls');
    },
  };
  // The recorder answers [] to every call: a parser that wants more (claim's width) may throw;
  // only the captured KEYS and ARGV matter here.
  await call(recorder).catch(() => undefined);
  const n = Number(out[0]);
  return { keys: out.slice(1, 1 + n).map(String), args: out.slice(1 + n) };
}

/** A script call with some ARGV (0-based index → value) replaced. */
export const withArgs = (args: (string | number)[], patch: Record<number, string | number>): (string | number)[] =>
  args.map((v, i) => (i in patch ? patch[i] : v));

/** Runs a captured call (optionally with patched ARGV) straight against the script. */
export const rerun = (c: ScriptClient, name: ScriptName, call: SentCall, patch: Record<number, string | number> = {}): Promise<unknown> =>
  runScript(c, name, call.keys, withArgs(call.args, patch));
