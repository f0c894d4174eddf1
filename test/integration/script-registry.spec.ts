/**
 * The script registry against a real Valkey: SCRIPT LOAD of every lua/<name>.lua answers the SHA1
 * the registry computed, and every script answers EMQ_VERSION to a caller of another version (or
 * no arguments at all) before anything else (docs/protocol.md §12). The pure checks of the
 * registry and the SHA table are test/unit/protocol-doc.spec.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'iovalkey';
import { PROTOCOL_VERSION, SCRIPT_NAMES, scripts, type ScriptName } from '../../src/protocol.js';
import { luaDir } from '../../src/core/scripts.js';
import { rawClient } from '../helpers/valkey.js';

const bytesOf = (name: string): Buffer => readFileSync(join(luaDir(), `${name}.lua`));

describe('SHA1 agrees with Valkey', () => {
  let raw: Redis;
  beforeAll(() => {
    raw = rawClient();
  });
  afterAll(async () => {
    await raw.quit();
  });

  it.each([...SCRIPT_NAMES])('SCRIPT LOAD of lua/%s.lua returns the registry SHA', async (name: ScriptName) => {
    const got = await raw.script('LOAD', bytesOf(name));
    expect(got).toBe(scripts().get(name)!.sha);
    expect(await raw.script('EXISTS', got as string)).toEqual([1]);
  });

  // docs/protocol.md §12: the version comes first, before any count, key or argument.
  it.each([...SCRIPT_NAMES])('lua/%s.lua answers EMQ_VERSION to another version with no keys or arguments, or to nothing at all', async (name: ScriptName) => {
    // "1" and "9" (the figures: an older and a newer caller), the next version, and none.
    for (const args of [['1'], ['9'], [String(Number(PROTOCOL_VERSION) + 1)], []]) {
      const err = await raw.evalsha(scripts().get(name)!.sha, 0, ...args).then(
        () => undefined,
        (e: Error) => e.message,
      );
      expect([args, err?.split(' ')[0]]).toEqual([args, 'EMQ_VERSION']);
    }
  });
});
