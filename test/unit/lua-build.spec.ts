import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROTOCOL_VERSION, SCRIPT_NAMES } from '../../src/protocol.js';
import { luaDir } from '../../src/core/scripts.js';
import { build, definitions, parseFragment, resolveFragments, usedDefinitions, type Manifest } from '../../scripts/lua/build.js';
import { parseHeader, parseSpec } from '../../scripts/lua/header.js';
import { freshBuild, readLuaFolder } from '../../scripts/lua-build.js';

const LUA = luaDir();
const manifest = (): Manifest => JSON.parse(readFileSync(join(LUA, 'manifest.json'), 'utf8')) as Manifest;

describe('the Lua build (lua/src + lua/lib -> lua/*.lua, lua/manifest.json)', () => {
  it('leaves the committed bytes and manifest exactly as a fresh build makes them (run `npm run lua:build`)', () => {
    const stale = [...freshBuild()].filter(([path, text]) => readFileSync(path, 'utf8') !== text).map(([path]) => path);
    expect(stale).toEqual([]);
  });

  it('lists every built script in the manifest with the SHA1 of its committed bytes', () => {
    const m = manifest();
    expect(m.scripts.map((s) => s.name).sort()).toEqual([...readLuaFolder(join(LUA, 'src')).keys()].sort());
    // The TypeScript registry speaks exactly the manifest's scripts, at its version.
    expect([...SCRIPT_NAMES].sort()).toEqual(m.scripts.map((s) => s.name).sort());
    expect(m.protocol).toBe(PROTOCOL_VERSION);
    for (const s of m.scripts) {
      expect(s.sha1).toBe(createHash('sha1').update(readFileSync(join(LUA, `${s.name}.lua`))).digest('hex'));
      expect(s.version).toBe(m.protocol);
      expect(s.args[0]).toMatchObject({ name: 'version', spec: { type: 'version' } });
    }
  });

  it('puts the shebang flags first, the banner next, the body in main and the runner last', () => {
    const out = build({
      sources: new Map([['x', '-- Does x.\n-- @arg version version v\n-- @returns 1\n-- @flags allow-oom\n-- @uses b\nreturn a() + b()\n']]),
      fragments: new Map([
        ['version', "local PROTOCOL = '7'"],
        ['run', 'local function run(main) return main(KEYS, ARGV) end'],
        ['a', 'local function a() return 1 end'],
        ['b', '-- @requires a\nlocal function b() return a() end'],
      ]),
    });
    expect(out.scripts.get('x')).toBe(
      '#!lua flags=allow-oom\n-- x.lua: EchoMQ protocol v7. Built from lua/src/x.lua and lua/lib/ by `npm run lua:build`; do not edit.\n' +
        '-- Does x.\n-- @arg version version v\n-- @returns 1\n-- @flags allow-oom\n-- @uses b\n' +
        'local function a() return 1 end\nlocal function b() return a() end\nlocal function run(main) return main(KEYS, ARGV) end\n' +
        'local function main(KEYS, ARGV)\nreturn a() + b()\nend\nreturn run(main)\n',
    );
    expect(out.manifest.scripts[0]).toMatchObject({ name: 'x', version: '7', flags: ['allow-oom'], fragments: ['a', 'b', 'run'] });
  });

  it('composes scripts: each part a local function, fragments once', () => {
    const part = (body: string) => `-- P.\n-- @arg version version v\n-- @returns 1\n-- @uses a\n${body}\n`;
    const out = build({
      sources: new Map([
        ['p', part('return a()')],
        ['q', part('return a() + 1')],
        ['pq', '-- Both.\n-- @arg version version v\n-- @returns 1\n-- @compose p q\nreturn p_part(KEYS, ARGV) + q_part(KEYS, ARGV)\n'],
      ]),
      fragments: new Map([['version', "local PROTOCOL = '1'"], ['run', 'local function run(m) end'], ['a', 'local function a() end']]),
    });
    const text = out.scripts.get('pq')!;
    expect(text.split('local function a()')).toHaveLength(2);
    expect(text).toContain('local function p_part(KEYS, ARGV)\nreturn a()\nend\nlocal function q_part(KEYS, ARGV)\nreturn a() + 1\nend\n');
  });

  it('carries only the definitions a script uses, directly or through another (Lua makes a closure of each at every call)', () => {
    const lib = parseFragment('lib', '-- The lib.\nlocal memo = nil\n-- Uses memo.\nlocal function used()\n  memo = 1\n  return helper()\nend\nlocal function helper() return 2 end\n-- Never called.\nlocal function unused()\nend');
    const { text, fragments } = usedDefinitions([lib], ['return used()']);
    expect(text).toBe('-- The lib.\nlocal memo = nil\n-- Uses memo.\nlocal function used()\n  memo = 1\n  return helper()\nend\nlocal function helper() return 2 end');
    expect(fragments).toEqual(['lib']);
    expect(usedDefinitions([lib], ['return 1'])).toEqual({ text: '', fragments: [] });
    expect(() => definitions(parseFragment('bad', 'x = 1\nlocal function f() end'))).toThrow(/code before its first definition/);
  });

  it('refuses a header without the version first, an unknown tag, a fragment cycle', () => {
    expect(() => parseHeader('f', ['-- @arg n 1..2 n', '-- @returns 1'])).toThrow(/first @arg must be the version/);
    expect(() => parseHeader('f', ['-- @arg version version v', '-- @retruns 1'])).toThrow(/unknown tag @retruns/);
    const frags = new Map([['run', parseFragment('run', '')], ['a', parseFragment('a', '-- @requires b\nx')], ['b', parseFragment('b', '-- @requires a\ny')]]);
    expect(() => resolveFragments(['a'], frags, 'f')).toThrow(/require each other/);
  });

  it('reads argument specs into the manifest shapes', () => {
    expect(parseSpec('1..1000')).toEqual({ type: 'int', min: 1, max: 1000 });
    expect(parseSpec('""|0..9')).toEqual({ type: 'int', min: 0, max: 9, empty: true });
    expect(parseSpec('pause|resume')).toEqual({ type: 'enum', values: ['pause', 'resume'] });
    expect(parseSpec('bytes:1..64')).toEqual({ type: 'bytes', min: 1, max: 64 });
    expect(parseSpec('id:job')).toEqual({ type: 'id', ns: 'job' });
    expect(parseSpec('json')).toEqual({ type: 'json' });
  });
});
