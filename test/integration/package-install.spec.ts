import { spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SCRIPT_NAMES } from '../../src/core/scripts.js';
import { alive } from '../helpers/child.js';
import { queueKeysIn, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';

// The package as a user gets it: `npm pack` (its prepack builds dist/src from scratch), the
// tarball installed into a fresh ESM Nest app beside the peers, the README's quick start compiled
// and booted from that app against the run's Valkey, a job enqueued over HTTP and handled by the
// `@Processor`. The peers come from npm's cache (`npm ci` filled it) when it has them.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const npm = spawnSync('npm', ['--version'], { encoding: 'utf8' });
const npmMissing = npm.error ? `npm is not available (${npm.error.message})` : '';
if (npmMissing) console.warn(`package-install.spec.ts skipped: ${npmMissing}`);

/** The version of a package installed in the repository (the peers are pinned to those, so npm's cache has them). */
const installed = (name: string): string => (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;

/**
 * This process's environment without what `npm test` adds for its own lifecycle
 * (`npm_config_local_prefix` names this repository: an `npm install` in the temp app must not
 * see it), keeping how npm reaches a registry (cache, registry, proxies, CA).
 */
const ENV: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith('npm_') || /^npm_config_(cache|registry|cafile|userconfig|globalconfig|(https?_|no)?proxy)$/i.test(k)),
);

/** Runs a command to its end; throws with its output when it fails. */
function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = ENV): string {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** The fenced blocks of a section of a doc whose first line is `// <file>`, by file (the README's quick start, docs/testing.md's jest set-up). */
function fencedFiles(doc: string, heading: string): Map<string, string> {
  const text = readFileSync(join(ROOT, doc), 'utf8');
  const at = text.indexOf(`## ${heading}`);
  const section = text.slice(at, text.indexOf('\n## ', at + 3));
  const files = new Map<string, string>();
  for (const m of section.matchAll(/```\w+\n\/\/ (\S+)\n([\s\S]*?)```/g)) files.set(m[1]!, m[2]!);
  return files;
}

/** A spec of the temp app: a module that fails DI while importing EchoMqTestingModule, and a bad option; it records the servers it saw start. */
const BROKEN_SPEC = `import 'reflect-metadata';
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { QueueService } from '@echomq/nestjs';
import { EchoMqTestingModule } from '@echomq/nestjs/testing';

class Mailer {}

@Injectable()
class Billing {
  constructor(readonly queues: QueueService, readonly mailer: Mailer) {}
}

/** valkey-server processes below this one, from /proc. */
function servers(): number[] {
  const parent = new Map<number, number>();
  const names = new Map<number, string>();
  for (const d of readdirSync('/proc').filter((d) => /^\\d+$/.test(d))) {
    try {
      const stat = readFileSync('/proc/' + d + '/stat', 'utf8');
      const close = stat.lastIndexOf(')');
      names.set(Number(d), stat.slice(stat.indexOf('(') + 1, close));
      parent.set(Number(d), Number(stat.slice(close + 2).split(' ')[1]));
    } catch {}
  }
  const below = (pid: number) => { for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) if (p === process.pid) return true; return false; };
  return [...names].filter(([pid, n]) => n.startsWith('valkey-server') && below(pid)).map(([pid]) => pid);
}

it('a DI error: compile rejects', async () => {
  await expect(Test.createTestingModule({ imports: [EchoMqTestingModule.forRoot()], providers: [Billing] }).compile()).rejects.toThrow(/can't resolve dependencies of the Billing/);
  // The server starts in the background after the rejection: record it for the outer test.
  for (let i = 0; i < 100 && servers().length === 0; i++) await new Promise((r) => setTimeout(r, 20));
  appendFileSync(process.env.SERVERS_FILE!, servers().map((p) => p + '\\n').join(''));
});

it('a bad option: refused by forRoot', () => {
  expect(() => EchoMqTestingModule.forRoot({ defaults: { attempts: -1 } })).toThrow(/attempts/);
});
`;

/** A second process of the temp app: a fleet-wide `@OnQueueEvent('completed')` listener that prints what it hears. */
const LISTENER = (queue: string): string => `import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EchoMqModule, OnQueueEvent, type QueueEventDetail } from '@echomq/nestjs';

@Injectable()
class GreetingLog {
  @OnQueueEvent('${queue}', 'completed', { scope: 'fleet' })
  seen(e: QueueEventDetail) {
    console.log('heard ' + JSON.stringify({ kind: e.kind, id: e.id, name: e.name, result: e.result }));
  }
}

@Module({
  imports: [EchoMqModule.forRoot({ connection: { url: process.env.VALKEY_URL! }, queues: { '${queue}': { eventsLog: 1000 } } })],
  providers: [GreetingLog],
})
class ListenerModule {}

const app = await NestFactory.createApplicationContext(ListenerModule, { logger: ['error', 'warn'] });
app.enableShutdownHooks();
await app.init();
console.log('listener ready');
`;

/** Starts `node <script>` in `cwd`, collecting its output; resolves once a line matches `ready` (or throws with the output). */
async function startNode(cwd: string, script: string, env: NodeJS.ProcessEnv, ready: RegExp): Promise<{ child: ReturnType<typeof spawn>; out: () => string; match: RegExpExecArray }> {
  const child = spawn(process.execPath, [script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const until = Date.now() + 30_000;
  for (;;) {
    const m = ready.exec(out);
    if (m) return { child, out: () => out, match: m };
    if (Date.now() > until || child.exitCode !== null) throw new Error(`${script} did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Every folder `@nestjs/<name>` under `dir`'s node_modules, at any depth (relative paths). */
function copiesOf(dir: string, name: string, rel = ''): string[] {
  const nm = join(dir, 'node_modules');
  if (!existsSync(nm)) return [];
  const out: string[] = [];
  for (const entry of readdirSync(nm)) {
    if (entry.startsWith('.')) continue;
    const scoped = entry.startsWith('@') ? readdirSync(join(nm, entry)).map((e) => `${entry}/${e}`) : [entry];
    for (const pkg of scoped) {
      const path = join(nm, pkg);
      if (pkg === `@nestjs/${name}`) out.push(join(rel, 'node_modules', pkg));
      if (!lstatSync(path).isSymbolicLink()) out.push(...copiesOf(path, name, join(rel, 'node_modules', pkg)));
    }
  }
  return out;
}

(npmMissing ? describe.skip : describe)('the packed package in a fresh Nest app', () => {
  const dir = mkdtempSync(join(tmpdir(), 'echomq-install-'));
  const queue = randomQueue('greetings');
  let tarball = '';
  let packed: string[] = [];
  let appPid = 0;
  let listenerPid = 0;

  afterAll(async () => {
    if (appPid && alive(appPid)) process.kill(appPid, 'SIGKILL');
    if (listenerPid && alive(listenerPid)) process.kill(listenerPid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    const raw = rawClient();
    const keys = await queueKeysIn(raw, queue);
    if (keys.length) await raw.del(...keys);
    raw.disconnect();
  }, 60_000);

  it('npm pack: the built runtime, its Lua, the bin, the docs; nothing stale, test-only or source-mapped', () => {
    const out = run('npm', ['pack', '--json', '--pack-destination', dir], ROOT);
    const info = (JSON.parse(out.slice(out.indexOf('[\n'))) as { filename: string; files: { path: string }[] }[])[0]!;
    tarball = join(dir, info.filename);
    packed = info.files.map((f) => f.path);
    expect(existsSync(tarball)).toBe(true);
    const mustHave = ['package.json', 'README.md', 'dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/testing.js', 'dist/src/protocol.js', 'dist/src/cli/main.js', 'lua/manifest.json', 'docs/testing.md'];
    expect(mustHave.filter((f) => !packed.includes(f))).toEqual([]);
    // Every script the runtime loads at run time (scripts.ts reads lua/<name>.lua).
    expect(SCRIPT_NAMES.filter((n) => !packed.includes(`lua/${n}.lua`))).toEqual([]);
    const unwanted = packed.filter((f) => /^(test|sample-app|bench|scripts|peers|conformance|node_modules|lua\/(src|lib)|dist\/(?!src\/))\//.test(f) || f.endsWith('.map'));
    expect(unwanted).toEqual([]);
    // Only the output of today's sources: no .js of a file renamed or deleted since some build.
    const stale = packed.filter((f) => f.startsWith('dist/src/') && f.endsWith('.js') && !existsSync(join(ROOT, f.replace(/^dist\//, '').replace(/\.js$/, '.ts'))));
    expect(stale).toEqual([]);
    expect(readFileSync(join(ROOT, 'dist/src/cli/main.js'), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  }, 120_000);

  it('installs beside the peers with one @nestjs/core, compiles the README quick start, boots and handles a job', async () => {
    expect(tarball).not.toBe('');
    const app = join(dir, 'app');
    mkdirSync(join(app, 'src'), { recursive: true });
    const pkg = {
      name: 'echomq-install-check',
      private: true,
      type: 'module',
      dependencies: Object.fromEntries([
        ['@echomq/nestjs', `file:${tarball}`],
        ...['@nestjs/common', '@nestjs/core', '@nestjs/platform-express', 'reflect-metadata', 'rxjs'].map((n) => [n, installed(n)]),
      ]),
      devDependencies: Object.fromEntries(['@types/node', '@types/jest', '@nestjs/testing', 'jest', 'ts-jest', 'typescript'].map((n) => [n, installed(n)])),
    };
    writeFileSync(join(app, 'package.json'), JSON.stringify(pkg, null, 2));
    const files = fencedFiles('README.md', 'Quick start');
    expect([...files.keys()].sort()).toEqual(['src/app.module.ts', 'src/greeter.ts', 'src/greetings.controller.ts', 'src/main.ts', 'tsconfig.json']);
    // The queue gets a random name (the run's Valkey is shared); the route stays /greetings.
    for (const [file, text] of files) writeFileSync(join(app, file), text.replace(/(Processor|enqueue|getJob)\('greetings'/g, `$1('${queue}'`));
    writeFileSync(join(app, 'src/listener.ts'), LISTENER(queue));

    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], app);
    // A copy, not a symlink into the checkout, and one @nestjs/core (and common) in the whole tree.
    expect(lstatSync(join(app, 'node_modules/@echomq/nestjs')).isSymbolicLink()).toBe(false);
    expect(copiesOf(app, 'core')).toEqual(['node_modules/@nestjs/core']);
    expect(copiesOf(app, 'common')).toEqual(['node_modules/@nestjs/common']);

    // The README's tsconfig and files type-check against the installed package's declarations.
    run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], app);

    // Another process listening fleet-wide, started first: its group exists before the job runs.
    const listener = await startNode(app, 'dist/listener.js', { ...ENV, VALKEY_URL: testUrl() }, /listener ready/);
    listenerPid = listener.child.pid!;
    const child = spawn(process.execPath, ['dist/main.js'], { cwd: app, env: { ...ENV, VALKEY_URL: testUrl(), PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    appPid = child.pid!;
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })));
    const until = Date.now() + 30_000;
    let port = '';
    while (!port) {
      if (Date.now() > until || child.exitCode !== null) throw new Error(`the app did not start: ${out}`);
      port = /listening on http:\/\/\S+:(\d+)/.exec(out)?.[1] ?? '';
      await new Promise((r) => setTimeout(r, 50));
    }
    const base = `http://127.0.0.1:${port}/greetings`;
    const posted = await fetch(base, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Ada' }) });
    expect(posted.status).toBe(201);
    const { id } = (await posted.json()) as { id: string };
    expect(id).toMatch(/^job/);
    let seen: unknown;
    for (let i = 0; i < 250; i++) {
      seen = await (await fetch(`${base}/${id}`)).json();
      if ((seen as { status?: string }).status === 'done') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(seen).toEqual({ status: 'done', result: { text: 'hello Ada' } });
    // The business id: the same POST adds nothing, and the job is found by it too.
    const again = await fetch(base, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Ada' }) });
    expect(((await again.json()) as { id: string }).id).toBe(id);
    expect(await (await fetch(`${base}/greeting-Ada`)).json()).toEqual(seen);
    // The job was named 'hello' and handled by the named processor; the other process heard it complete, with its result.
    const heard = `heard ${JSON.stringify({ kind: 'completed', id, name: 'hello', result: { text: 'hello Ada' } })}`;
    for (let i = 0; i < 300 && !listener.out().includes(heard); i++) await new Promise((r) => setTimeout(r, 50));
    expect(listener.out()).toContain(heard);
    listener.child.kill('SIGTERM');

    // The shutdown hooks close it on SIGTERM (Nest then re-raises the signal).
    child.kill('SIGTERM');
    expect(await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 10_000))])).toEqual({ code: null, signal: 'SIGTERM' });
    expect(out).not.toMatch(/ERROR|can't resolve/);

    // The bin.
    expect(run(process.execPath, ['node_modules/.bin/echomq', '--help'], app)).toContain('Usage: echomq');
  }, 180_000);

  it("runs docs/testing.md's jest configuration and first test; a DI failure and a bad option leave no valkey-server, and jest exits by itself", async () => {
    const app = join(dir, 'app');
    expect(existsSync(join(app, 'node_modules/jest'))).toBe(true);
    const files = fencedFiles('docs/testing.md', 'Jest configuration (ESM)');
    expect([...files.keys()].sort()).toEqual(['jest.config.js', 'src/greeter.spec.ts']);
    for (const [file, text] of files) writeFileSync(join(app, file), text.replace(/(enqueue|getJob)\('greetings'/g, `$1('${queue}'`));
    writeFileSync(join(app, 'src/broken.spec.ts'), BROKEN_SPEC);
    const serversFile = join(dir, 'servers.txt');
    writeFileSync(serversFile, '');
    const t0 = Date.now();
    // No --forceExit: jest must end on its own (killed here after 120 s).
    const r = spawnSync(process.execPath, ['--experimental-vm-modules', 'node_modules/jest/bin/jest.js', '--ci'], {
      cwd: app,
      env: { ...ENV, SERVERS_FILE: serversFile },
      encoding: 'utf8',
      timeout: 120_000,
      killSignal: 'SIGKILL',
    });
    const output = `${r.stdout}${r.stderr}`;
    expect({ status: r.status, signal: r.signal, output: r.status === 0 ? '' : output }).toEqual({ status: 0, signal: null, output: '' });
    expect(output).toMatch(/Tests:\s+3 passed, 3 total/);
    expect(output).not.toMatch(/did not exit one second|failed to exit gracefully|open handle|torn down/i);
    expect(output).not.toContain('(WARN)'); // ts-jest is content with the documented tsconfig
    expect(Date.now() - t0).toBeLessThan(100_000);
    const servers = readFileSync(serversFile, 'utf8').split('\n').filter(Boolean).map(Number);
    expect(servers.length).toBe(1); // the DI failure's module did start one…
    for (let i = 0; i < 100 && servers.some(alive); i++) await new Promise((r) => setTimeout(r, 30));
    expect(servers.filter(alive)).toEqual([]); // …and it is gone with jest
  }, 150_000);
});
