/**
 * The TypeScript conformance runner: executes the scenario files of `conformance/scenarios/`
 * (format: conformance/README.md) against a real Valkey, through the bytes of `lua/*.lua` (EVALSHA,
 * EVAL on NOSCRIPT) and raw commands only — no EchoMQ runtime code, so it tests the wire as a
 * black box, exactly as the Go runner (peers/go/conformance) does.
 *
 * Run: `npm test`, or only the conformance suite:
 *   node dist/scripts/with-valkey.js node --experimental-vm-modules node_modules/jest/bin/jest.js \
 *     --runInBand test/conformance
 * Select files with ECHOMQ_CONFORMANCE, a comma-separated list of file names without `.json`
 * (e.g. `ECHOMQ_CONFORMANCE=claim,enqueue`); unset or empty = every file. A named file that does
 * not exist fails the run. Select scenarios by name with jest's `-t <substring>`.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'iovalkey';
import { checkFile, checkScenario, ScenarioFormatError, type Scenario, type Step } from './format.js';
import { match, Mismatch, show, type Reply } from './match.js';
import { mentionsNodeKeys, Scope } from './rewrite.js';
import { diffSnapshots, takeSnapshot, type Snapshot } from './snapshot.js';
import { checkState } from './state.js';

/** Every string a scenario's steps hold, at any depth (the owners it leases node numbers under). */
function stringsOf(value: unknown, out: Set<string> = new Set()): Set<string> {
  if (typeof value === 'string') out.add(value);
  else if (Array.isArray(value)) for (const v of value) stringsOf(v, out);
  else if (typeof value === 'object' && value !== null) for (const v of Object.values(value)) stringsOf(v, out);
  return out;
}

/** The repository root (this file is test/conformance/runner.ts). */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SCENARIOS = join(ROOT, 'conformance', 'scenarios');
const LUA = join(ROOT, 'lua');

/** One scenario of one file, validated, or the reason it is malformed. */
export interface LoadedScenario {
  readonly name: string;
  readonly scenario?: Scenario;
  readonly error?: string;
}

/** One scenario file, or the reason it cannot be read. */
export interface LoadedFile {
  readonly file: string;
  readonly scenarios: LoadedScenario[];
  readonly error?: string;
}

/** One script: its bytes and their SHA1. */
interface Script {
  readonly bytes: Buffer;
  readonly sha: string;
}

/** The scripts of lua/, by name. */
export function loadScripts(dir = LUA): Map<string, Script> {
  const out = new Map<string, Script>();
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.lua'))) {
    const bytes = readFileSync(join(dir, f));
    out.set(f.slice(0, -4), { bytes, sha: createHash('sha1').update(bytes).digest('hex') });
  }
  return out;
}

/** The file names selected by ECHOMQ_CONFORMANCE (all when unset). */
export function selectedFiles(env = process.env.ECHOMQ_CONFORMANCE, dir = SCENARIOS): string[] {
  const all = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json')).sort() : [];
  const wanted = (env ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  if (wanted.length === 0) return all;
  return wanted.map((w) => (w.endsWith('.json') ? w : `${w}.json`));
}

/** Reads and validates the selected files; malformed ones are returned with their error. */
export function loadFiles(scripts: ReadonlyMap<string, Script>, files = selectedFiles(), dir = SCENARIOS): LoadedFile[] {
  const names = new Set(scripts.keys());
  return files.map((file): LoadedFile => {
    try {
      const raw = checkFile(JSON.parse(readFileSync(join(dir, file), 'utf8')) as unknown, file);
      const seen = new Set<string>();
      const scenarios = raw.scenarios.map((s, i): LoadedScenario => {
        const name = typeof (s as { name?: unknown })?.name === 'string' ? (s as { name: string }).name : `#${i}`;
        const unique = seen.has(name) ? `${name} (#${i})` : name;
        seen.add(name);
        try {
          return { name: unique, scenario: checkScenario(s, `scenario ${i} "${name}"`, names) };
        } catch (e) {
          return { name: unique, error: (e as Error).message };
        }
      });
      return { file, scenarios };
    } catch (e) {
      return { file, scenarios: [], error: `${file}: ${(e as Error).message}` };
    }
  });
}

/** The text of an error reply, or undefined when `e` is not one (a connection failure is rethrown). */
function replyErrorText(e: unknown): string {
  if (e instanceof Error && e.name === 'ReplyError') return e.message;
  throw e;
}

/** A step that failed, with where it is. */
export class StepFailure extends Error {
  override name = 'StepFailure';
}

const errorMatches = (text: string, want: string) => text === want || text.startsWith(`${want} `);

/** Runs scenarios against one connection. */
export class ConformanceRunner {
  constructor(
    private readonly redis: Redis,
    private readonly scripts: ReadonlyMap<string, Script>,
  ) {}

  /** Runs one scenario; throws a StepFailure naming the file, scenario and step. */
  async run(file: string, scenario: Scenario): Promise<void> {
    const withNodes = mentionsNodeKeys(scenario.steps);
    const ctx: Ctx = { scope: new Scope(), snapshots: new Map(), withNodes, owners: withNodes ? stringsOf(scenario.steps) : undefined };
    try {
      await this.steps(scenario.steps, ctx, '');
    } catch (e) {
      const where = (e as { where?: string }).where ?? '?';
      const names = `($Q=${ctx.scope.Q}, $T=${ctx.scope.T}, $NS=${ctx.scope.NS})`;
      throw new StepFailure(`${file} › "${scenario.name}" › step ${where}: ${(e as Error).message}\n  ${names}`);
    }
  }

  private async steps(steps: Step[], ctx: Ctx, prefix: string): Promise<void> {
    for (let i = 0; i < steps.length; i++) {
      const where = `${prefix}${i}`;
      try {
        await this.step(steps[i], ctx, where);
      } catch (e) {
        const err = e as Error & { where?: string };
        if (err.where === undefined) err.where = `${where} ${describe(steps[i])}`;
        throw err;
      }
    }
  }

  private async step(s: Step, ctx: Ctx, where: string): Promise<void> {
    const { scope } = ctx;
    if ('repeat' in s) {
      for (let k = 0; k < s.repeat; k++) await this.steps(s.steps, ctx, `${where}.(iteration ${k + 1}).`);
    } else if ('sleep' in s) {
      await new Promise((r) => setTimeout(r, s.sleep));
    } else if ('keys_state' in s) {
      for (const [ref, st] of Object.entries(s.keys_state)) await checkState(this.redis, scope.text(ref), st, scope);
    } else if ('snapshot' in s) {
      ctx.snapshots.set(s.snapshot, await takeSnapshot(this.redis, scope, ctx.withNodes, ctx.owners));
    } else if ('unchanged' in s) {
      const before = ctx.snapshots.get(s.unchanged);
      if (!before) throw new ScenarioFormatError(`no snapshot "${s.unchanged}" was taken before this step`);
      const diff = diffSnapshots(before, await takeSnapshot(this.redis, scope, ctx.withNodes, ctx.owners));
      if (diff) throw new StepFailure(`keys changed since snapshot "${s.unchanged}":\n${diff}`);
    } else {
      const args = ('call' in s ? [...(s.keys ?? []), ...(s.argv ?? [])] : s.command).map((a) => (typeof a === 'number' ? String(a) : scope.text(a)));
      const sent = 'call' in s ? `${s.call}(keys ${show(args.slice(0, (s.keys ?? []).length))}, argv ${show(args.slice((s.keys ?? []).length))})` : show(args);
      let reply: Reply;
      try {
        reply = 'call' in s ? await this.evalsha(s.call, (s.keys ?? []).length, args) : ((await this.redis.call(args[0], ...args.slice(1))) as Reply);
      } catch (e) {
        const text = replyErrorText(e);
        if (s.error !== undefined && errorMatches(text, s.error)) return;
        throw new StepFailure(`sent ${sent}\n  expected ${s.error !== undefined ? `error ${s.error}` : show(s.expect ?? 'a reply')}, actual error reply ${show(text)}`);
      }
      if (s.error !== undefined) throw new StepFailure(`sent ${sent}\n  expected error ${s.error}, actual reply ${show(reply)}`);
      if (s.expect === undefined) return;
      try {
        match(s.expect, reply, scope);
      } catch (e) {
        if (e instanceof Mismatch) throw new StepFailure(`sent ${sent}\n  ${e.message}\n  whole reply: ${show(reply)}`);
        throw e;
      }
    }
  }

  private async evalsha(name: string, nkeys: number, args: string[]): Promise<Reply> {
    const script = this.scripts.get(name);
    if (!script) throw new ScenarioFormatError(`no script lua/${name}.lua`);
    try {
      return (await this.redis.call('EVALSHA', script.sha, nkeys, ...args)) as Reply;
    } catch (e) {
      if (!(e instanceof Error && e.name === 'ReplyError' && e.message.startsWith('NOSCRIPT'))) throw e;
      return (await this.redis.call('EVAL', script.bytes, nkeys, ...args)) as Reply;
    }
  }
}

interface Ctx {
  readonly scope: Scope;
  readonly snapshots: Map<string, Snapshot>;
  /** With the node keys: every string the scenario sends (its owner tokens among them). */
  readonly owners?: ReadonlySet<string>;
  readonly withNodes: boolean;
}

function describe(s: Step): string {
  if ('call' in s) return `(call ${s.call})`;
  if ('command' in s) return `(command ${String(s.command[0])})`;
  return `(${Object.keys(s).filter((k) => k !== 'note')[0]})`;
}
