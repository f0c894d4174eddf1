/**
 * Where the fan-out row's listener CPU goes (docs/queue.md, "Performance of fleet listeners"):
 * fills a queue's lifecycle log with the `completed` events of `n` jobs (processed at concurrency
 * 50 with no listener reading), then starts `listeners` `EventLogReader`s (each its own group,
 * created before the jobs ran, on its own connection, as in bench/fanout.ts) and times their
 * drain: wall time and this process's CPU per job per listener. The readers come from the build
 * at `FP_ROOT` (default: this checkout), so two builds' readers can be compared on the same log.
 * `FP_LIVE=1`: as the row runs, the readers hear the jobs while they run (wall and CPU then
 * include the consumer's, the same code in both builds).
 *
 * `node dist/scripts/with-valkey.js node [--cpu-prof] bench/dist/fanout-probe.js [n] [listeners]`
 */
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { BUILTIN_DEFAULTS, resolveDefaults } from '@echomq/nestjs/unstable';
import { inBatches, payload100, randomQueue, sleep } from './common.js';
import { EVENTS_LOG_ENTRIES } from './bus.js';
import { EchoMqDriver } from './echomq.js';
import { Counter } from './phases.js';

interface Reader {
  open(): Promise<void>;
  start(): void;
  stop(ms?: number): Promise<void>;
}
interface Conn {
  open(): Promise<void>;
  close(): Promise<void>;
}

async function main(): Promise<void> {
  const url = process.env.ECHOMQ_TEST_URL;
  if (!url) throw new Error('ECHOMQ_TEST_URL is not set (run under dist/scripts/with-valkey.js)');
  const n = Number(process.argv[2] ?? 20_000);
  const listeners = Number(process.argv[3] ?? 4);
  const live = process.env.FP_LIVE === '1';
  const root = resolve(process.env.FP_ROOT ?? '.');
  const lib = (await import(pathToFileURL(`${root}/dist/src/unstable.js`).href)) as { EventLogReader: new (c: Conn, o: object) => Reader };
  const proto = (await import(pathToFileURL(`${root}/dist/src/protocol.js`).href)) as { EchoMqConnection: new (o: { url: string }) => Conn };
  const queue = randomQueue('fanp');
  const driver = new EchoMqDriver(url, resolveDefaults(BUILTIN_DEFAULTS, { eventsLog: EVENTS_LOG_ENTRIES }));
  const conns: Conn[] = [];
  const readers: Reader[] = [];
  const heard: number[] = [];
  for (let i = 0; i < listeners; i++) {
    const conn = new proto.EchoMqConnection({ url });
    await conn.open();
    conns.push(conn);
    heard.push(0);
    const r = new lib.EventLogReader(conn, { queue, group: `fp${i}`, consumer: 'probe', kinds: ['completed'], sink: () => void heard[i]++ });
    await r.open();
    readers.push(r);
  }
  const p = await driver.producer(queue);
  await inBatches(p, n, payload100);
  await p.close();
  const ran = new Counter();
  const consumer = await driver.consumer(queue, 50, ran.tick);
  if (live) for (const r of readers) r.start();
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  await consumer.start();
  if (!live) {
    await ran.reach(n);
    await consumer.close();
    for (const r of readers) r.start();
  }
  while (Math.min(...heard) < n) await sleep(1);
  const cpu = process.cpuUsage(c0);
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  if (live) await consumer.close();
  await Promise.all(readers.map((r) => r.stop(5000)));
  await Promise.all(conns.map((c) => c.close()));
  await driver.close();
  const us = ((cpu.user + cpu.system) / n / listeners).toFixed(2);
  console.log(JSON.stringify({ root, live, n, listeners, wall_s: +wall.toFixed(3), events_per_s: Math.round((n * listeners) / wall), cpu_us_per_job_listener: +us }));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
