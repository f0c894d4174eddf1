/**
 * A measurement, not a test (issue 39, docs/bus.md "Bounds by default"): publishes to one topic
 * with `maxLen` and an archive byte bound at a steady rate, lets the Bus service's automatic trims
 * run (every 5 s, as in production), and samples every 10 s the log's `MEMORY USAGE`, the
 * archive's running byte total (meta `archiveBytes`) and segment count, and the server's
 * `INFO memory` `used_memory`. The figures should stay flat once the archive reaches its bound.
 *
 *   node dist/scripts/with-valkey.js node dist/scripts/bus-retention-memory.js --minutes 10
 *
 * Options: --minutes (1..60, default 10), --rate (events/s, default 1000), --max-len (default
 * 10000), --archive-mib (the archive byte bound in MiB, default 8), --payload (bytes of padding
 * per event, default 60), --unbounded (no archive bound at all, as before issue 39: the contrast),
 * --url (default ECHOMQ_TEST_URL).
 */
import { Redis } from 'iovalkey';
import { BusService } from '../src/bus/bus-service.js';
import { EchoMqConnection } from '../src/core/connection/index.js';
import { topicKeys } from '../src/core/keys.js';

function num(name: string, fallback: number, lo: number, hi: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isFinite(v) || v < lo || v > hi) throw new Error(`--${name} must be a number in ${lo}..${hi}`);
  return v;
}

const i = process.argv.indexOf('--url');
const url = i >= 0 ? process.argv[i + 1] : process.env.ECHOMQ_TEST_URL;
if (!url) throw new Error('give --url or run under dist/scripts/with-valkey.js');
const minutes = num('minutes', 10, 0.2, 60);
const rate = num('rate', 1000, 10, 20000);
const maxLen = num('max-len', 10000, 1, 1e9);
const archiveBytes = Math.round(num('archive-mib', 8, 0, 1024) * 1048576);
const pad = 'x'.repeat(num('payload', 60, 0, 100000));
const unbounded = process.argv.includes('--unbounded');

const mib = (n: number): string => (n / 1048576).toFixed(2);

async function main(): Promise<void> {
  const conn = new EchoMqConnection({ url });
  await conn.open();
  const raw = new Redis(url as string);
  const bus = new BusService(conn, { trimIntervalMs: 5000 });
  const topic = `retention-memory-${Date.now().toString(36)}`;
  const k = topicKeys(topic);
  await bus.setRetention(topic, unbounded ? { maxLen, unbounded: true } : { maxLen, archiveMaxBytes: archiveBytes });
  const usedMemory = async (): Promise<number> => Number(/used_memory:(\d+)/.exec(await raw.info('memory'))?.[1] ?? NaN);
  const sample = async (): Promise<number[]> => [
    await raw.xlen(k.log),
    Number(await raw.call('MEMORY', 'USAGE', k.log)) || 0,
    await raw.zcard(k.archive),
    Number((await raw.hget(k.meta, 'archiveBytes')) ?? 0),
    await usedMemory(),
  ];
  const start = Date.now();
  const end = start + minutes * 60_000;
  console.log(`topic ${topic}: maxLen ${maxLen}, archiveMaxBytes ${unbounded ? 'unbounded' : `${mib(archiveBytes)} MiB`}, ${rate} events/s, ${minutes} min, payload ~${pad.length + 40} B`);
  console.log('| t (s) | events | log entries | log MiB (MEMORY USAGE) | archive segments | archive MiB (archiveBytes) | log + archive MiB | used_memory MiB |');
  console.log('|---|---|---|---|---|---|---|---|');
  let sent = 0;
  let nextSample = start + 10_000;
  const tick = 100; // ms per batch
  const perBatch = Math.max(1, Math.round((rate * tick) / 1000));
  const rows: number[][] = [];
  while (Date.now() < end) {
    const due = Math.floor(((Date.now() - start) / 1000) * rate);
    if (sent < due) {
      const n = Math.min(1000, due - sent);
      await bus.publishMany(topic, Array.from({ length: n }, (_, j) => ({ n: sent + j, kind: 'order.created', pad })));
      sent += n;
    } else await new Promise((r) => setTimeout(r, Math.min(tick, Math.max(1, Math.ceil(((sent + perBatch) / rate) * 1000 - (Date.now() - start))))));
    if (Date.now() >= nextSample) {
      nextSample += 10_000;
      const [len, logB, segs, archB, used] = await sample();
      rows.push([len, logB, segs, archB, used]);
      const t = Math.round((Date.now() - start) / 1000);
      console.log(`| ${t} | ${sent} | ${len} | ${mib(logB)} | ${segs} | ${mib(archB)} | ${mib(logB + archB)} | ${mib(used)} |`);
    }
  }
  const late = rows.slice(Math.floor(rows.length / 2));
  const range = (col: number): string => `${mib(Math.min(...late.map((r) => r[col])))}..${mib(Math.max(...late.map((r) => r[col])))}`;
  const secs = Math.round((Date.now() - start) / 1000);
  const growth = rows.length > 1 ? ((rows[rows.length - 1][4] - rows[0][4]) / ((rows.length - 1) * 10) / 1024).toFixed(1) : '?';
  console.log(`\nsecond half of the run: log ${range(1)} MiB, archive ${range(3)} MiB (bound ${unbounded ? 'none' : mib(archiveBytes)}), used_memory ${range(4)} MiB; ${sent} events in ${secs} s; used_memory ${growth} KiB/s from the first sample to the last`);
  await bus.close();
  const keys = await raw.keys(`emq:{${topic}}:*`);
  for (let j = 0; j < keys.length; j += 500) await raw.del(...keys.slice(j, j + 500));
  await raw.quit();
  await conn.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
