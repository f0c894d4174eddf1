import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EchoMqError } from './errors.js';
import { fromReplyError } from './reply-errors.js';

/** The protocol version every script checks (`ARGV[1]`). */
export const PROTOCOL_VERSION = '2';

/** The names of the scripts in `lua/`, one per transition. */
export const SCRIPT_NAMES = ['enqueue', 'claim', 'complete', 'retry', 'extend', 'reap', 'release', 'cancel', 'peek', 'node', 'publish', 'trim', 'retention', 'dead-letter', 'cache-announce', 'cache-set', 'cache-invalidate', 'cache-lease', 'cache-get', 'cache-tag', 'flow-add', 'flow-deliver', 'outbox-take', 'outbox-ack', 'schedule', 'tick', 'progress', 'pause', 'drain', 'revive', 'promote', 'remove', 'purge', 'announce', 'bus-dead', 'round', 'park', 'policy', 'priority', 'elog', 'stats', 'lease', 'semaphore'] as const;
/** A script name. */
export type ScriptName = (typeof SCRIPT_NAMES)[number];

/** A pipeline as the registry needs it. */
export interface ScriptPipeline {
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): unknown;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/** The minimal client surface the registry needs (iovalkey's Redis and Cluster both fit). */
export interface ScriptClient {
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(source: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  pipeline(): ScriptPipeline;
}

/** One script call: which script, its KEYS and ARGV, and how to read its reply. */
export interface ScriptCall<T> {
  readonly name: ScriptName;
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
  readonly parse: (reply: unknown) => T;
}

/** One loaded script: its exact bytes and their SHA1. */
export interface LoadedScript {
  readonly name: ScriptName;
  readonly source: string;
  readonly sha: string;
}

/** Finds the package's `lua/` folder, walking up from this file (works from src/ and dist/). */
export function luaDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'lua');
    if (existsSync(join(candidate, 'enqueue.lua'))) return candidate;
    dir = dirname(dir);
  }
  throw new EchoMqError('EMQ_INTERNAL', 'EchoMQ: cannot find the lua/ folder of the package');
}

/** SHA1 of a script's bytes, as Valkey computes it. */
export function sha1(source: string | Buffer): string {
  return createHash('sha1').update(source).digest('hex');
}

let loaded: Map<ScriptName, LoadedScript> | undefined;
/** Reads every script's bytes once; the bytes sent to Valkey are exactly the file's bytes. */
export function scripts(): Map<ScriptName, LoadedScript> {
  if (!loaded) {
    const dir = luaDir();
    loaded = new Map(
      SCRIPT_NAMES.map((name) => {
        const source = readFileSync(join(dir, `${name}.lua`), 'utf8');
        return [name, { name, source, sha: sha1(source) }];
      }),
    );
  }
  return loaded;
}

/** True for Valkey's NOSCRIPT refusal (the script is not in the server's cache). */
export const isNoScript = (err: unknown): boolean => err instanceof Error && err.message.startsWith('NOSCRIPT');

/**
 * Runs a script by EVALSHA; on NOSCRIPT (restart, failover, SCRIPT FLUSH) sends the same bytes
 * by EVAL, which also reloads the cache. A NOSCRIPT reply means the script did not run, so the
 * fallback never runs anything twice.
 */
export async function runScript(
  client: ScriptClient,
  name: ScriptName,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  const script = scripts().get(name)!;
  try {
    return await client.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (err) {
    if (!isNoScript(err)) throw fromReplyError(err);
    try {
      return await client.eval(script.source, keys.length, ...keys, ...args);
    } catch (err2) {
      throw fromReplyError(err2);
    }
  }
}

/** Runs one script call and parses its reply (a reply of an unexpected shape fails typed, EMQ_INTERNAL). */
export async function call<T>(client: ScriptClient, c: ScriptCall<T>): Promise<T> {
  const reply = await runScript(client, c.name, c.keys, c.args);
  try {
    return c.parse(reply);
  } catch (err) {
    throw fromReplyError(err);
  }
}

/**
 * Sends several script calls in one write (one round trip) and settles each on its own. A call
 * answered NOSCRIPT inside the pipeline did not run; it is re-sent by EVAL afterwards, in order,
 * so the fallback holds inside pipelines too. A connection failure rejects every call.
 */
export async function callPipeline<T extends readonly ScriptCall<unknown>[]>(
  client: ScriptClient,
  calls: T,
): Promise<{ [K in keyof T]: PromiseSettledResult<T[K] extends ScriptCall<infer R> ? R : never> }> {
  type Settled = { [K in keyof T]: PromiseSettledResult<T[K] extends ScriptCall<infer R> ? R : never> };
  if (calls.length === 1) {
    // One call needs no pipeline object: a plain EVALSHA is cheaper on the client.
    const [only] = await Promise.allSettled([call(client, calls[0])]);
    return [only] as unknown as Settled;
  }
  const all = scripts();
  const p = client.pipeline();
  for (const c of calls) p.evalsha(all.get(c.name)!.sha, c.keys.length, ...c.keys, ...c.args);
  let replies: [Error | null, unknown][] | null;
  try {
    replies = await p.exec();
  } catch (err) {
    throw fromReplyError(err);
  }
  const out: PromiseSettledResult<unknown>[] = [];
  for (let i = 0; i < calls.length; i++) {
    const c = calls[i];
    const [err, reply] = replies?.[i] ?? [new Error('no reply'), undefined];
    try {
      if (!err) out.push({ status: 'fulfilled', value: c.parse(reply) });
      else if (isNoScript(err)) out.push({ status: 'fulfilled', value: await call(client, c) });
      else out.push({ status: 'rejected', reason: fromReplyError(err) });
    } catch (e) {
      out.push({ status: 'rejected', reason: fromReplyError(e) });
    }
  }
  return out as unknown as Settled;
}
