import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fromReplyError } from './errors.js';

/** The protocol version every script checks (`ARGV[1]`). */
export const PROTOCOL_VERSION = '1';

/** The names of the scripts in `lua/`, one per transition. */
export const SCRIPT_NAMES = ['enqueue', 'claim', 'complete', 'retry', 'extend', 'reap', 'cancel', 'peek', 'node'] as const;
/** A script name. */
export type ScriptName = (typeof SCRIPT_NAMES)[number];

/** The minimal client surface the registry needs (iovalkey's Redis and Cluster both fit). */
export interface ScriptClient {
  evalsha(sha: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(source: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
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
  throw new Error('EchoMQ: cannot find the lua/ folder of the package');
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

const isNoScript = (err: unknown): boolean => err instanceof Error && err.message.startsWith('NOSCRIPT');

/**
 * Runs a script by EVALSHA; on NOSCRIPT (restart, failover, SCRIPT FLUSH) sends the same bytes
 * by EVAL, which also reloads the cache. A NOSCRIPT reply means the script did not run, so the
 * fallback never runs anything twice. Commands issued in one tick share one write when the
 * client auto-pipelines, and each keeps its own fallback: that is the fallback inside pipelines.
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
