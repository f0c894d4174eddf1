/**
 * `npm run sample:load`: sends a few thousand orders across symbols to the sample exchange and
 * prints orders/s, trades/s, settlement latency p50/p99 and what each instance did.
 *
 *   npm run sample:load                                   # its own Valkey and two instances
 *   npm run sample:load -- --crash                        # the same, SIGKILLing one instance mid-load and restarting it
 *   npm run sample:load -- --url http://localhost:3000,http://localhost:3001 --orders 5000
 *
 * Options: --url (comma-separated instances; default: start an embedded valkey-server and
 * --instances N child processes), --instances (1..4, default 2), --orders (default 3000),
 * --parallel (concurrent HTTP requests, default 32), --symbols (1..26, default 8), --rate (orders
 * per second, default unpaced: a paced run shows the settlement latency away from saturation),
 * --crash (local instances only: SIGKILL the first instance once a third of the orders are in,
 * restart it on its port 1 s later), --admin-key (for /stats; default derived from
 * EXCHANGE_SECRET as the exchange does).
 *
 * It survives an instance's death: a request that fails is retried on another instance with the
 * same client order id (idempotent placement), a failed instance is skipped for a second and
 * then tried again, and /stats is read from any instance that answers.
 */
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { deriveAdminKey } from '../sample-app/config/exchange.config.js';
import { startEmbedded, type EmbeddedServer } from '../sample-app/embedded-valkey.js';
import { InstancePool } from '../sample-app/load/instance-pool.js';
import { spawnInstance, type ChildInstance } from '../sample-app/load/instances.js';
import { loadSecret, orderFlow, placeAll } from '../sample-app/load/order-flow.js';
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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How long the run waits for the exchange to work off what it accepted. */
const QUIESCE_MS = 300_000;

/** An embedded Valkey and `n` instances as child processes; `crash(i)` SIGKILLs instance i and restarts it on its port. */
async function startLocal(n: number): Promise<{ bases: string[]; crash: (i: number) => Promise<number>; stop: () => Promise<void> }> {
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
    crash: async (i) => {
      const c = instances[i];
      await c.kill();
      const t0 = performance.now();
      await sleep(1000);
      instances[i] = await spawnInstance(embedded.url, `load-${i + 1}`, c.port);
      return performance.now() - t0;
    },
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
  const crash = process.argv.includes('--crash');
  if (crash && given) throw new Error('--crash needs local instances (no --url): kill one of yours by hand instead');
  const admin = { 'x-api-key': arg('admin-key', deriveAdminKey(loadSecret())) };
  const local = given ? undefined : await startLocal(intArg('instances', 2, 1, 4));
  const pool = new InstancePool(given ? given.split(',').map((u) => u.trim().replace(/\/$/, '')) : local!.bases);
  const stats = async (last = 1000): Promise<ExchangeStats> => (await pool.get<ExchangeStats>(`/stats?last=${last}`, admin)).body;
  try {
    const before = await stats();
    const orders = orderFlow(Date.now() % 100_000, n, symbols, `load-${Date.now().toString(36)}`);
    console.log(`sending ${n} orders over ${symbols.length} symbols to ${pool.bases.join(', ')} (${parallel} at a time${rate ? `, ${rate}/s` : ''}${crash ? ', SIGKILLing the first instance after a third' : ''})`);
    const t0 = performance.now();
    let placed = false;
    const placing = placeAll(() => pool.live(), orders, parallel, rate, loadSecret(), pool).finally(() => (placed = true));
    let crashed: Promise<string> | undefined;
    if (crash && local) {
      const accepted = (): number => [...pool.tally.values()].reduce((s, t) => s + t.accepted + t.repeat, 0);
      crashed = (async () => {
        while (accepted() < n / 3 && !placed) await sleep(20);
        const at = (performance.now() - t0) / 1000;
        const downMs = await local.crash(0);
        return `SIGKILLed ${pool.bases[0]} at ${at.toFixed(1)} s, back on its port ${(downMs / 1000).toFixed(1)} s later (1 s down + its start)`;
      })();
    }
    await placing;
    const accepted = performance.now() - t0;
    let matched = 0;
    let last = before;
    for (let stable = 0; stable < 3; ) {
      if (performance.now() - t0 > QUIESCE_MS) throw new Error(`not quiet after ${QUIESCE_MS / 1000} s: ${JSON.stringify(last)}`);
      await sleep(100);
      const s = await stats();
      if (!matched && s.sequenced >= before.sequenced + n) matched = performance.now() - t0;
      const idle = Object.values(s.backlog).every((b) => b === 0);
      stable = matched && idle && s.settled === last.settled ? stable + 1 : 0;
      last = s;
    }
    const settledAll = performance.now() - t0 - 300;
    const trades = last.settled - before.settled;
    const { base: from, body } = await pool.get<ExchangeStats>(`/stats?last=${Math.max(1, Math.min(trades, 100_000))}`, admin);
    const lat = body.latency;
    const perSec = (count: number, ms: number) => (count / (ms / 1000)).toFixed(0);
    if (crashed) console.log(`crash:      ${await crashed}`);
    console.log(`orders:     ${n} accepted in ${(accepted / 1000).toFixed(2)} s (${perSec(n, accepted)} orders/s over HTTP), matched in ${(matched / 1000).toFixed(2)} s (${perSec(n, matched)} orders/s)`);
    console.log(`trades:     ${trades} settled in ${(settledAll / 1000).toFixed(2)} s (${perSec(trades, settledAll)} trades/s)`);
    console.log(`settlement: trade → ledger p50 ${lat.p50 ?? '-'} ms, p99 ${lat.p99 ?? '-'} ms (${lat.n} settlements; ${body.latency.samples} samples for ${body.settled} settled, read from ${from})`);
    console.log(`instances (requests per outcome):\n${pool.report()}`);
  } finally {
    await local?.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : String(err));
  process.exitCode = 1;
});
