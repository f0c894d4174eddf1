/**
 * Where a Bus group member's client time goes: `GroupConsumer` against the raw loop of
 * `bus-raw.ts` over the same pre-published log, alternated, each reporting events/s and the
 * client CPU per event (`process.cpuUsage`, user + system, over the timed part). Run under
 * `node --cpu-prof` for a profile. Usage:
 * `node bench/dist/bus-group-probe.js <url> [--c 50] [--n 60000] [--pairs 3] [--only echomq|raw] [--count 50]`
 * (`--count`: the raw loop's `XREADGROUP COUNT`).
 */
import { randomQueue } from './common.js';
import { BusInspector, openMember, prefill, type Member } from './bus.js';
import { openRawMember } from './bus-raw.js';

interface Args {
  url: string;
  c: number;
  n: number;
  pairs: number;
  only?: string;
  /** The raw loop's COUNT (default 50). */
  count?: number;
}

function parse(argv: string[]): Args {
  const a: Args = { url: argv[0] ?? 'redis://127.0.0.1:6379', c: 50, n: 60_000, pairs: 3 };
  for (let i = 1; i < argv.length; i += 2) {
    const v = argv[i + 1];
    if (argv[i] === '--c') a.c = Number(v);
    else if (argv[i] === '--n') a.n = Number(v);
    else if (argv[i] === '--pairs') a.pairs = Number(v);
    else if (argv[i] === '--only') a.only = v;
    else if (argv[i] === '--count') a.count = Number(v);
  }
  return a;
}

/** One run: events/s and client µs per event over the second half of `n`. */
async function run(url: string, raw: boolean, c: number, n: number, count?: number): Promise<{ rate: number; cpuUs: number }> {
  const topic = randomQueue('probe');
  await prefill(url, topic, n);
  const inspect = new BusInspector(url);
  let handled = 0;
  const half = Math.floor(n / 2);
  let t0 = 0;
  let cpu0: NodeJS.CpuUsage | undefined;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const tick = (): void => {
    handled++;
    if (handled === half) {
      t0 = performance.now();
      cpu0 = process.cpuUsage();
      if (process.env.PROBE_MARKS) console.log(`mark start ${process.hrtime.bigint() / 1000n}`);
    }
    if (handled === n) {
      if (process.env.PROBE_MARKS) console.log(`mark end ${process.hrtime.bigint() / 1000n}`);
      done();
    }
  };
  const member: Member = raw ? openRawMember(url, topic, c, tick, count) : await openMember(url, topic, c, tick);
  await member.start();
  await all;
  await inspect.acked(topic);
  const secs = (performance.now() - t0) / 1000;
  const used = process.cpuUsage(cpu0);
  await member.close();
  await inspect.close();
  const events = n - half;
  return { rate: events / secs, cpuUs: (used.user + used.system) / events };
}

async function main(): Promise<void> {
  const a = parse(process.argv.slice(2));
  // An untimed run of each first, so neither side's first timed run pays the JIT's warm-up.
  for (const raw of [false, true]) if (!a.only || a.only === (raw ? 'raw' : 'echomq')) await run(a.url, raw, a.c, Math.min(a.n, 20_000), a.count);
  for (let p = 0; p < a.pairs; p++) {
    const order = p % 2 === 0 ? [false, true] : [true, false];
    const got: Record<string, { rate: number; cpuUs: number }> = {};
    for (const raw of order) {
      if (a.only && a.only !== (raw ? 'raw' : 'echomq')) continue;
      got[raw ? 'raw' : 'echomq'] = await run(a.url, raw, a.c, a.n, a.count);
    }
    const e = got.echomq;
    const r = got.raw;
    const line = [
      `pair ${p + 1} c${a.c}`,
      e ? `echomq ${Math.round(e.rate)}/s ${e.cpuUs.toFixed(2)} µs/ev` : '',
      r ? `raw ${Math.round(r.rate)}/s ${r.cpuUs.toFixed(2)} µs/ev` : '',
      e && r ? `ratio ${(e.rate / r.rate).toFixed(2)}` : '',
    ].join('  ');
    console.log(line);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
