/**
 * Lifecycle fan-out (`fanout_completed_x4_per_s`): jobs processed at concurrency 50 while 4
 * listeners each hear every job's `completed` event. EchoMQ: the queue's lifecycle log on
 * (`eventsLog: 10000`) and 4 `EventLogReader`s, each its own consumer group (every group sees
 * every event) on its own connection, as 4 processes with `@OnQueueEvent(q, 'completed',
 * { scope: 'fleet' })` would read it. BullMQ: 4 `QueueEvents`, each on its own connection,
 * counting `completed`. Bee-queue has no such fan-out here.
 */
import { QueueEvents } from 'bullmq';
import { EchoMqConnection } from '@echomq/nestjs/protocol';
import { BUILTIN_DEFAULTS, EventLogReader, resolveDefaults } from '@echomq/nestjs/unstable';
import { inBatches, payload100, randomQueue, sleep } from './common.js';
import { EVENTS_LOG_ENTRIES } from './bus.js';
import { EchoMqDriver } from './echomq.js';
import { Counter, drained, warmCount, type PhaseContext, type PhaseResult } from './phases.js';

/** Listeners of the fan-out row. */
export const FANOUT_LISTENERS = 4;

/** How long the listeners may take to hear every event before the row reports what they heard. */
const FANOUT_TIMEOUT_MS = 60_000;

interface Listener {
  /** `completed` events heard so far. */
  readonly heard: () => number;
  close(): Promise<void>;
}

async function echoListener(url: string, queue: string, i: number): Promise<Listener> {
  const conn = new EchoMqConnection({ url });
  await conn.open();
  let n = 0;
  const reader = new EventLogReader(conn, { queue, group: `fan${i}`, consumer: 'bench', kinds: ['completed'], sink: () => void n++ });
  await reader.open();
  reader.start();
  return {
    heard: () => n,
    close: async () => {
      await reader.stop(5000);
      await conn.close();
    },
  };
}

async function bullListener(url: string, queue: string): Promise<Listener> {
  const u = new URL(url);
  const qe = new QueueEvents(queue, { connection: { host: u.hostname, port: Number(u.port) } });
  let n = 0;
  qe.on('completed', () => void n++);
  qe.on('error', (err) => console.error(`[bullmq events] ${err.message}`));
  await qe.waitUntilReady();
  return { heard: () => n, close: () => qe.close() };
}

/**
 * Opens the listeners (at the log's end), pre-enqueues warm-up + `n` jobs, starts one consumer of
 * concurrency 50 and times from the moment it ran the warm-up jobs until every listener heard the
 * `completed` event of every job; jobs/s over that span.
 */
export async function fanoutCompleted(ctx: PhaseContext, n: number, listeners = FANOUT_LISTENERS): Promise<PhaseResult> {
  const { probe, url } = ctx;
  const own = ctx.driver.name === 'echomq' ? new EchoMqDriver(url, resolveDefaults(BUILTIN_DEFAULTS, { eventsLog: EVENTS_LOG_ENTRIES })) : undefined;
  const driver = own ?? ctx.driver;
  const queue = randomQueue('fan');
  const ls: Listener[] = [];
  try {
    for (let i = 0; i < listeners; i++) ls.push(own ? await echoListener(url, queue, i) : await bullListener(url, queue));
    const warm = warmCount(ctx, n, 0);
    const p = await driver.producer(queue);
    await inBatches(p, warm + n, payload100);
    await p.close();
    const ran = new Counter();
    const consumer = await driver.consumer(queue, 50, ran.tick);
    try {
      let m = warm > 0 ? undefined : await probe.start();
      await consumer.start();
      await ran.reach(warm);
      m ??= await probe.start(() => ran.value);
      const until = Date.now() + FANOUT_TIMEOUT_MS;
      const least = (): number => Math.min(...ls.map((l) => l.heard()));
      while (least() < warm + n && Date.now() < until) await sleep(1);
      const heard = least();
      const jobs = heard - m.startMark;
      const cost = await m.stop(jobs);
      await drained(driver, queue);
      const short = heard < warm + n ? `; timed out: the slowest listener heard ${heard} of ${warm + n}` : '';
      return { values: { fanout_completed_x4_per_s: jobs / cost.seconds }, cost, note: `${listeners} listeners heard ${ls.map((l) => l.heard()).join(' / ')}${short}` };
    } finally {
      await consumer.close();
    }
  } finally {
    await Promise.all(ls.map((l) => l.close()));
    await own?.close();
    await probe.flush();
  }
}
