/**
 * Child entry of the multi-process case: `node bench/dist/worker.js '<WorkerArgs JSON>'`, with an
 * IPC channel. Connects one consumer (EchoMQ or BullMQ), reports `ready`, starts on `go`, reports
 * progress every few ms, and on `stop` closes, reports its CPU time and exits.
 */
import type { FromChild, ToChild, WorkerArgs } from './children.js';
import { makeDriver } from './drivers.js';

const PROGRESS_EVERY_MS = 5;

function send(m: FromChild): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) throw new Error('bench worker needs an IPC channel');
    process.send(m, undefined, undefined, () => resolve());
  });
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs;
  const driver = makeDriver(args.system, args.url);
  let processed = 0;
  const consumer = await driver.consumer(args.queue, args.concurrency, () => {
    processed++;
  });
  let cpu0 = process.cpuUsage();
  let reported = 0;
  let timer: NodeJS.Timeout | undefined;
  process.on('message', (m: ToChild) => {
    if (m.type === 'go') {
      cpu0 = process.cpuUsage();
      timer = setInterval(() => {
        if (processed === reported) return;
        reported = processed;
        const c = process.cpuUsage(cpu0);
        void send({ type: 'progress', processed, cpuUs: c.user + c.system });
      }, PROGRESS_EVERY_MS);
      void consumer.start();
    } else {
      void (async () => {
        const c = process.cpuUsage(cpu0);
        clearInterval(timer);
        await consumer.close();
        await driver.close();
        await send({ type: 'stopped', processed, cpuUs: c.user + c.system });
        process.disconnect();
        // Everything is closed, so the process should exit by itself; say so if a handle lingers.
        setTimeout(() => {
          console.warn(`bench worker (${args.system}): handles still open 2 s after close; exiting`);
          process.exit(0);
        }, 2000).unref();
      })();
    }
  });
  await send({ type: 'ready' });
}

main().catch((err: unknown) => {
  console.error('bench worker failed:', err);
  process.exit(1);
});
