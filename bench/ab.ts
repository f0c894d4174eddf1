/**
 * `npm run bench:ab -- --base <git ref> [--pairs 5] [--rows single,c50,…] [--write]`: EchoMQ
 * against an earlier EchoMQ. Checks the ref out in a temporary worktree, builds it with this
 * checkout's node_modules, then runs each row for both builds in the same process on one fresh
 * Valkey per pair: a warm-up run as long as the timed one, the two builds alternating which goes
 * first, and the per-pair ratio current/base. Prints and writes `bench/out/benchmarks-ab.md`, or
 * with `--write` the committed `docs/benchmarks-ab.md` (median ratio with min–max, the load
 * average at start and end). Each build runs its own bench phases and drivers against its own
 * library, so a row measures the code as it was at that ref (a ref from before the bench became
 * its own package has its bench in `dist/bench/`, a later one in `bench/dist/`). `--pin` pins this process to CPU 0
 * and each pair's Valkey to CPU 1 (`taskset`): on a 2-core machine the scheduler otherwise
 * sometimes puts the client and the server on one core, which halves a run's rate at random.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startEmbeddedValkey } from '@echomq/nestjs/testing';
import { median } from './format.js';
import { AB_ROWS, runRow, type AbBuild, type RowName } from './ab-rows.js';
import { reportPath, writesCommitted, wroteLine } from './output.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The value of `--name v` in argv, or `fallback`. */
function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

/**
 * Checks `ref` out in a temporary worktree and builds it (the library, then the bench where it is
 * its own package); returns the folder of its compiled bench modules and a cleanup.
 */
function buildRef(ref: string): { bench: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'emq-ab-'));
  execFileSync('git', ['-C', ROOT, 'worktree', 'add', '--detach', dir, ref], { stdio: 'ignore' });
  const remove = (): void => {
    execFileSync('git', ['-C', ROOT, 'worktree', 'remove', '--force', dir], { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    const tsc = join(ROOT, 'node_modules/.bin/tsc');
    execFileSync(tsc, ['-p', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' });
    if (!existsSync(join(dir, 'bench/package.json'))) return { bench: join(dir, 'dist/bench'), remove };
    // The shared node_modules links @echomq/nestjs to this checkout: the ref's bench must import
    // the ref's library, so its own node_modules (found first) links it to the worktree, beside
    // links to whatever npm installed in this checkout's bench/node_modules.
    const own = join(dir, 'bench/node_modules');
    mkdirSync(join(own, '@echomq'), { recursive: true });
    symlinkSync(dir, join(own, '@echomq/nestjs'));
    const ours = join(ROOT, 'bench/node_modules');
    for (const e of existsSync(ours) ? readdirSync(ours) : []) if (e !== '@echomq' && e !== '.bin') symlinkSync(join(ours, e), join(own, e));
    execFileSync(tsc, ['-p', 'bench/tsconfig.build.json'], { cwd: dir, stdio: 'inherit' });
    return { bench: join(dir, 'bench/dist'), remove };
  } catch (err) {
    remove();
    throw err;
  }
}

/** Loads a build's bench modules (its own phases, drivers and probe) from their folder. */
async function load(bench: string): Promise<AbBuild> {
  const m = async (p: string): Promise<Record<string, unknown>> => (await import(pathToFileURL(join(bench, p)).href)) as Record<string, unknown>;
  return { phases: await m('phases.js'), bus: await m('bus-phases.js'), drivers: await m('drivers.js'), probe: await m('probe.js') };
}

async function main(): Promise<void> {
  const base = arg('base', '');
  if (!base) throw new Error('usage: npm run bench:ab -- --base <git ref> [--pairs 5] [--scale 1] [--rows single,batch,…] [--pin] [--write]');
  const pairs = Number(arg('pairs', '5'));
  const scale = Number(arg('scale', '1'));
  if (!(scale > 0 && scale <= 100)) throw new Error('--scale must be a number in (0, 100]');
  const rows = arg('rows', AB_ROWS.join(',')).split(',') as RowName[];
  const pin = process.argv.includes('--pin');
  if (pin) execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
  for (const r of rows) if (!AB_ROWS.includes(r)) throw new Error(`unknown row ${r}; rows: ${AB_ROWS.join(', ')}`);
  const head = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD']).toString().trim();
  const baseSha = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', base]).toString().trim();
  const built = buildRef(base);
  const loadStart = loadavg()[0];
  const ratios = new Map<string, { base: number[]; cur: number[]; r: number[] }>();
  try {
    const builds: Record<'base' | 'cur', AbBuild> = { base: await load(built.bench), cur: await load(dirname(fileURLToPath(import.meta.url))) };
    for (let i = 0; i < pairs; i++) {
      const valkey = await startEmbeddedValkey();
      if (pin) execFileSync('taskset', ['-a', '-p', '-c', '1', String(valkey.pid)], { stdio: 'ignore' });
      try {
        for (const row of rows) {
          const order: ('base' | 'cur')[] = i % 2 === 0 ? ['base', 'cur'] : ['cur', 'base'];
          const got: Partial<Record<'base' | 'cur', Record<string, number>>> = {};
          for (const side of order) got[side] = await runRow(builds[side], row, valkey.url, scale);
          for (const [metric, b] of Object.entries(got.base ?? {})) {
            const c = got.cur?.[metric];
            if (c === undefined) continue;
            const e = ratios.get(`${row}\t${metric}`) ?? { base: [], cur: [], r: [] };
            e.base.push(b);
            e.cur.push(c);
            e.r.push(c / b);
            ratios.set(`${row}\t${metric}`, e);
            console.log(`pair ${i} ${metric}: base ${b.toFixed(3)} current ${c.toFixed(3)} ratio ${(c / b).toFixed(3)} (load ${loadavg()[0].toFixed(2)})`);
          }
        }
      } finally {
        await valkey.stop();
      }
    }
  } finally {
    built.remove();
  }
  const lines = [
    `# EchoMQ against ${base} (${baseSha})`,
    '',
    `Generated by \`npm run bench:ab -- --base ${base}${writesCommitted() ? ' --write' : ''}\` (\`bench/ab.ts\`) on ${new Date().toISOString().slice(0, 19)}Z at ${head}:`,
    `${pairs} pairs (job counts ×${scale}), each on a fresh Valkey${pin ? ' pinned to CPU 1 (this process to CPU 0)' : ''}, both builds in one process, a warm-up run as long as the timed run,`,
    `the builds alternating which goes first. Ratio = current / base per pair: median [min–max]. For rates`,
    `higher is better; for latencies lower is better. Load average ${loadStart.toFixed(2)} at start, ${loadavg()[0].toFixed(2)} at end.`,
    '',
    '| metric | base (median) | current (median) | ratio median [min–max] |',
    '|---|---:|---:|---|',
  ];
  for (const [key, e] of ratios) {
    const metric = key.split('\t')[1];
    const sorted = [...e.r].sort((x, y) => x - y);
    lines.push(`| ${metric} | ${median(e.base).toFixed(2)} | ${median(e.cur).toFixed(2)} | ${median(e.r).toFixed(3)} [${sorted[0].toFixed(3)}–${sorted[sorted.length - 1].toFixed(3)}] |`);
  }
  const text = `${lines.join('\n')}\n`;
  console.log(`\n${text}`);
  const out = reportPath('docs/benchmarks-ab.md');
  writeFileSync(out.abs, text);
  console.log(wroteLine([out.rel]));
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? err.stack : err);
    process.exit(1);
  },
);
