/**
 * `npm run sample:load`: sends a few thousand orders across symbols to the sample exchange and
 * prints orders/s, trades/s and settlement latency p50/p99.
 *
 *   npm run sample:load                                   # its own Valkey and two instances
 *   npm run sample:load -- --url http://localhost:3000,http://localhost:3001 --orders 5000
 *
 * Options: --url (comma-separated instances; default: start an embedded valkey-server and
 * --instances N child processes), --instances (1..4, default 2), --orders (default 3000),
 * --parallel (concurrent HTTP requests, default 32), --symbols (1..26, default 8), --rate (orders
 * per second, default unpaced: a paced run shows the settlement latency away from saturation).
 */
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { startEmbedded, type EmbeddedServer } from '../sample-app/embedded-valkey.js';
import { spawnInstance, type ChildInstance } from '../sample-app/load/instances.js';
import { orderFlow, placeAll } from '../sample-app/load/order-flow.js';
import type { ExchangeStats } from '../sample-app/web/stats.controller.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1] : fallback;
}

function intArg(name: string, fallback: number, lo: number, hi: number): number {
  const v = Number(arg(name, String(fallback)));
  if (!Number.isInteger(v) || v < lo || v > hi) throw new Error(`--${name} must be an integer in ${lo}..${hi}`);
  return v;
}

const stats = async (base: string, last = 1000): Promise<ExchangeStats> => (await (await fetch(`${base}/stats?last=${last}`)).json()) as ExchangeStats;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts an embedded Valkey and `n` instances as child processes. */
async function startLocal(n: number): Promise<{ bases: string[]; stop: () => Promise<void> }> {
  const embedded: EmbeddedServer = await startEmbedded(new Logger('Load'));
  const instances: ChildInstance[] = [];
  try {
    for (let i = 0; i < n; i++) instances.push(await spawnInstance(embedded.url, `load-${i + 1}`));
  } catch (err) {
    for (const c of instances) await c.kill();
    await embedded.stop();
    throw err;
  }
  return {
    bases: instances.map((c) => c.base),
    stop: async () => {
      await Promise.all(instances.map((c) => c.stop()));
      await embedded.stop();
    },
  };
}

async function main(): Promise<void> {
  const n = intArg('orders', 3000, 1, 1_000_000);
  const parallel = intArg('parallel', 32, 1, 1000);
  const symbols = Array.from({ length: intArg('symbols', 8, 1, 26) }, (_, i) => `${String.fromCharCode(65 + i)}CO`);
  const rate = arg('rate', '') ? intArg('rate', 0, 1, 100_000) : undefined;
  const given = arg('url', '');
  const local = given ? undefined : await startLocal(intArg('instances', 2, 1, 4));
  const bases = given ? given.split(',').map((u) => u.trim().replace(/\/$/, '')) : local!.bases;
  try {
    const before = await stats(bases[0]);
    const orders = orderFlow(Date.now() % 100_000, n, symbols, `load-${Date.now().toString(36)}`);
    console.log(`sending ${n} orders over ${symbols.length} symbols to ${bases.join(', ')} (${parallel} at a time${rate ? `, ${rate}/s` : ''})`);
    const t0 = performance.now();
    await placeAll(() => bases, orders, parallel, rate);
    const accepted = performance.now() - t0;
    let matched = 0;
    let last = before;
    for (let stable = 0; stable < 3; ) {
      await sleep(100);
      const s = await stats(bases[0]);
      if (!matched && s.sequenced >= before.sequenced + n) matched = performance.now() - t0;
      const idle = Object.values(s.backlog).every((b) => b === 0);
      stable = matched && idle && s.settled === last.settled ? stable + 1 : 0;
      last = s;
    }
    const settledAll = performance.now() - t0 - 300;
    const trades = last.settled - before.settled;
    const lat = (await stats(bases[0], Math.max(1, Math.min(trades, 100_000)))).latency;
    const perSec = (count: number, ms: number) => (count / (ms / 1000)).toFixed(0);
    console.log(`orders:     ${n} accepted in ${(accepted / 1000).toFixed(2)} s (${perSec(n, accepted)} orders/s over HTTP), matched in ${(matched / 1000).toFixed(2)} s (${perSec(n, matched)} orders/s)`);
    console.log(`trades:     ${trades} settled in ${(settledAll / 1000).toFixed(2)} s (${perSec(trades, settledAll)} trades/s)`);
    console.log(`settlement: trade → ledger p50 ${lat.p50 ?? '-'} ms, p99 ${lat.p99 ?? '-'} ms (${lat.n} settlements)`);
  } finally {
    await local?.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : String(err));
  process.exitCode = 1;
});
