/**
 * Child entry of the cache invalidation-lag phase: `node bench/dist/cache-worker.js '<LagArgs JSON>'`,
 * with an IPC channel. Opens one cache instance (EchoMQ or bentocache), warms its L1 with the hot
 * key, reports `ready`; on each `arm` it polls `get` in a tight `setImmediate` loop and reports the
 * instant it first sees the new value; on `stop` it closes and exits.
 */
import { openCache, type CacheSystem } from './cache.js';
import { nowMs } from './common.js';

/** What the child is told on its command line (one JSON argument). */
export interface LagArgs {
  readonly system: CacheSystem;
  readonly url: string;
  readonly namespace: string;
  readonly key: string;
}

/** Parent → child: poll until the value numbered `expect` shows, or close and exit. */
export type ToLagChild = { readonly type: 'arm'; readonly expect: number } | { readonly type: 'stop' };

/** Child → parent: warmed up; polling (its L1 still serves the old value); the new value seen at `t`. */
export type FromLagChild =
  | { readonly type: 'ready' }
  | { readonly type: 'armed'; readonly l1Old: boolean }
  | {
      readonly type: 'seen';
      readonly expect: number;
      readonly t: number;
      readonly polls: number;
      /** The longest single poll of the round (ms, `get` plus the tick after it): a process that waited for a CPU shows here. */
      readonly longestPollMs: number;
    };

function send(m: FromLagChild): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) throw new Error('cache worker needs an IPC channel');
    process.send(m, undefined, undefined, () => resolve());
  });
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? '{}') as LagArgs;
  const cache = await openCache(args.system, args);
  // Warm L1 with value 0 (the parent wrote it before spawning this process).
  while ((await cache.get(args.key))?.i !== 0) await tick();
  process.on('message', (m: ToLagChild) => {
    if (m.type === 'arm') {
      void (async () => {
        // The previous value, served by this process's L1 until the invalidation arrives.
        const before = await cache.get(args.key);
        await send({ type: 'armed', l1Old: before?.i === m.expect - 1 });
        let polls = 0;
        let longestPollMs = 0;
        let last = nowMs();
        for (;;) {
          polls++;
          const v = await cache.get(args.key);
          const t = nowMs();
          longestPollMs = Math.max(longestPollMs, t - last);
          last = t;
          if (v?.i === m.expect) {
            await send({ type: 'seen', expect: m.expect, t, polls, longestPollMs });
            return;
          }
          await tick();
        }
      })();
    } else {
      void (async () => {
        await cache.close();
        process.disconnect();
        setTimeout(() => {
          console.warn(`cache worker (${args.system}): handles still open 2 s after close; exiting`);
          process.exit(0);
        }, 2000).unref();
      })();
    }
  });
  await send({ type: 'ready' });
}

main().catch((err: unknown) => {
  console.error('cache worker failed:', err);
  process.exit(1);
});
