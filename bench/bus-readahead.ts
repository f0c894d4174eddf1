/**
 * The Bus group at concurrency 1 with read-ahead (`prefetch`, docs/bus.md "Read-ahead") against
 * the raw loop of `bus-raw.ts` reading `COUNT 50`, alternated in one run: each pair runs both
 * over their own pre-published log of `n` events (the order alternating pair to pair), timed
 * over the second half (the first half warms up), until every handler ran and the group's
 * `XPENDING` summary is 0. Prints each pair with the load average, then the median of the
 * per-pair ratios [min–max]. Usage:
 * `node bench/dist/bus-readahead.js <url> [--prefetch 50] [--n 40000] [--pairs 3]`
 * (`--prefetch 0` measures the default member, one entry per read).
 */
import { loadavg } from 'node:os';
import { randomQueue } from './common.js';
import { BusInspector, openMember, prefill } from './bus.js';
import { openRawMember, RAW_READ_COUNT } from './bus-raw.js';

interface Args {
  url: string;
  prefetch: number;
  n: number;
  pairs: number;
}

function parse(argv: string[]): Args {
  const a: Args = { url: argv[0] ?? 'redis://127.0.0.1:6379', prefetch: RAW_READ_COUNT, n: 40_000, pairs: 3 };
  for (let i = 1; i < argv.length; i += 2) {
    const v = Number(argv[i + 1]);
    if (argv[i] === '--prefetch') a.prefetch = v;
    else if (argv[i] === '--n') a.n = v;
    else if (argv[i] === '--pairs') a.pairs = v;
  }
  return a;
}

/** One run: events/s over the second half of `n`. */
async function run(url: string, raw: boolean, prefetch: number, n: number): Promise<number> {
  const topic = randomQueue('readahead');
  await prefill(url, topic, n);
  const inspect = new BusInspector(url);
  let handled = 0;
  const half = Math.floor(n / 2);
  let t0 = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const tick = (): void => {
    handled++;
    if (handled === half) t0 = performance.now();
    if (handled === n) done();
  };
  const member = raw ? openRawMember(url, topic, 1, tick) : await openMember(url, topic, 1, tick, prefetch);
  await member.start();
  await all;
  await inspect.acked(topic);
  const secs = (performance.now() - t0) / 1000;
  await member.close();
  await inspect.close();
  return (n - half) / secs;
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function main(): Promise<void> {
  const a = parse(process.argv.slice(2));
  // An untimed run of each first, so neither side's first timed run pays the JIT's warm-up.
  for (const raw of [false, true]) await run(a.url, raw, a.prefetch, Math.min(a.n, 10_000));
  const ratios: number[] = [];
  const loads: number[] = [];
  for (let p = 0; p < a.pairs; p++) {
    const order = p % 2 === 0 ? [false, true] : [true, false];
    const got: Record<string, number> = {};
    for (const raw of order) got[raw ? 'raw' : 'echomq'] = await run(a.url, raw, a.prefetch, a.n);
    const load = loadavg()[0];
    loads.push(load);
    ratios.push(got.echomq / got.raw);
    console.log(`pair ${p + 1} (${order.map((r) => (r ? 'raw' : 'echomq')).join(' then ')}): echomq c1 prefetch ${a.prefetch} ${Math.round(got.echomq)}/s  raw COUNT ${RAW_READ_COUNT} ${Math.round(got.raw)}/s  ratio ${(got.echomq / got.raw).toFixed(2)}  load ${load.toFixed(1)}`);
  }
  console.log(`median ratio ${median(ratios).toFixed(2)} [${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}] over ${a.pairs} pairs, load ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
