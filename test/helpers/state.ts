import type { Redis } from 'iovalkey';
import { queueKeysIn } from './valkey.js';

/** The content of one key, in a form `toEqual` can compare. */
export type KeyState =
  | { type: 'hash'; value: Record<string, string> }
  | { type: 'zset'; value: string[] }
  | { type: 'list'; value: string[] }
  | { type: 'set'; value: string[] }
  | { type: 'string'; value: string | null }
  | { type: string; value: null };

/**
 * Every key of `queue` with its type and content (zsets with scores), except the keys named in
 * `skip` (e.g. the wake list, which idle consumers pop at any time).
 */
export async function queueState(raw: Redis, queue: string, skip: readonly string[] = []): Promise<Record<string, KeyState>> {
  const out: Record<string, KeyState> = {};
  for (const key of await queueKeysIn(raw, queue)) {
    if (skip.includes(key)) continue;
    const type = await raw.type(key);
    if (type === 'hash') out[key] = { type, value: await raw.hgetall(key) };
    else if (type === 'zset') out[key] = { type, value: await raw.zrange(key, 0, -1, 'WITHSCORES') };
    else if (type === 'list') out[key] = { type, value: await raw.lrange(key, 0, -1) };
    else if (type === 'set') out[key] = { type, value: (await raw.smembers(key)).sort() };
    else if (type === 'string') out[key] = { type, value: await raw.get(key) };
    else out[key] = { type, value: null };
  }
  return out;
}
