/**
 * The staleness phase (EchoMQ only: no peer ties HTTP caching to domain events): two Nest app
 * instances serve a product page through `CacheInterceptor`, tagged `product:<id>`; instance A
 * follows the topic (`cache.invalidateOn`), instance B does not (`consumers: false`), so every
 * refresh on B rides the whole path — a plain producer's `BusService.publish`, A's consumer
 * group, `invalidateTag`, the namespace's invalidation log and signal, B's L1. Per round: B
 * holds the page (a HIT of the old price), the origin changes, the producer publishes; the
 * figure is the time from just before `publish` to B's first response with the new price, its
 * GETs looping back to back (one `setImmediate` apart). A, B and the producer share one process
 * and its event loop, so B's polling competes with A's consumer: the figure is an upper bound. Run alone: `node bench/dist/cache-staleness.js [--rounds N]`.
 */
import 'reflect-metadata';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { Controller, Get, Module, Param, UseInterceptors, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { BusService, CacheInterceptor, CacheScope, EchoMqModule, type BusEvent } from '@echomq/nestjs';
import { EchoMqConnection } from '@echomq/nestjs/protocol';
import { startEmbeddedValkey } from '@echomq/nestjs/testing';
import { nowMs, percentile } from './common.js';

/** The staleness figures (ms): event publish → refreshed page on the other instance. */
export interface StalenessResult {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** Median ms from publish to A's consumer group running the rule (the rest is invalidation + coherence + B's next GET). */
  readonly deliveryP50: number;
  /** Timed rounds (after the untimed warm-up). */
  readonly rounds: number;
}

const WARMUP = 10;
const prices = new Map<string, number>();
/** When the rule last mapped an event (same process, same clock). */
let mappedAt = 0;

@Controller('products')
@UseInterceptors(CacheInterceptor)
class ProductPage {
  @Get(':id')
  @CacheScope('public', { ttlMs: 600_000, tags: (req) => [`product:${req.params?.id ?? ''}`] })
  page(@Param('id') id: string): { id: string; price: number } {
    return { id, price: prices.get(id) ?? 0 };
  }
}

async function instance(url: string, namespace: string, topic: string, follows: boolean): Promise<{ app: INestApplication; base: string }> {
  const cache = { namespace, invalidateOn: [{ topic, tags: (e: BusEvent<{ id: string }>) => {
    mappedAt = nowMs();
    return [`product:${e.payload.id}`];
  } }] };
  @Module({ imports: [EchoMqModule.forRoot({ connection: { url }, cache, consumers: follows })], controllers: [ProductPage] })
  class StalenessApp {}
  const app = await NestFactory.create(StalenessApp, { logger: false });
  await app.listen(0, '127.0.0.1');
  return { app, base: await app.getUrl() };
}

async function price(base: string, id: string): Promise<{ price: number; cache: string | null }> {
  const r = await fetch(`${base}/products/${id}`);
  return { price: ((await r.json()) as { price: number }).price, cache: r.headers.get('x-cache') };
}

/** Runs `rounds` timed rounds (after 10 untimed ones) on the Valkey at `url`. */
export async function cacheStaleness(url: string, rounds: number): Promise<StalenessResult> {
  const tag = randomBytes(4).toString('hex');
  const namespace = `stale-${tag}`;
  const topic = `products-${tag}`;
  const a = await instance(url, namespace, topic, true);
  const b = await instance(url, namespace, topic, false);
  const producer = new EchoMqConnection({ url });
  await producer.open();
  const bus = new BusService(producer, { trimIntervalMs: 0 });
  const lags: number[] = [];
  const deliveries: number[] = [];
  try {
    for (let r = 1; r <= WARMUP + rounds; r++) {
      const id = String(r);
      prices.set(id, r * 10);
      await price(a.base, id);
      // B holds the page: a HIT of the current price.
      for (let tries = 0; ; tries++) {
        const p = await price(b.base, id);
        if (p.cache === 'HIT' && p.price === r * 10) break;
        if (tries > 1000) throw new Error(`staleness bench: instance B does not hold page ${id} (last answer ${JSON.stringify(p)})`);
      }
      prices.set(id, r * 10 + 1);
      const t0 = nowMs();
      await bus.publish(topic, { id });
      while ((await price(b.base, id)).price !== r * 10 + 1) {
        if (nowMs() - t0 > 10_000) throw new Error(`staleness bench: page ${id} not refreshed within 10 s`);
        await new Promise((res) => setImmediate(res)); // let A's consumer group and B's coherence run
      }
      if (r > WARMUP) {
        lags.push(nowMs() - t0);
        deliveries.push(mappedAt - t0);
      }
    }
  } finally {
    await bus.close();
    await producer.close();
    await b.app.close();
    await a.app.close();
  }
  lags.sort((x, y) => x - y);
  deliveries.sort((x, y) => x - y);
  return { p50: percentile(lags, 0.5), p99: percentile(lags, 0.99), max: lags[lags.length - 1] ?? 0, deliveryP50: percentile(deliveries, 0.5), rounds };
}

/** The result as one line of text. */
export const stalenessLine = (s: StalenessResult): string =>
  `event → refreshed page on the other instance: p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms, max ${s.max.toFixed(2)} ms (${s.rounds} rounds; publish → group handler p50 ${s.deliveryP50.toFixed(2)} ms)`;

async function main(): Promise<void> {
  const i = process.argv.indexOf('--rounds');
  const rounds = i > 0 ? Number(process.argv[i + 1]) : 200;
  const valkey = await startEmbeddedValkey();
  try {
    console.log(stalenessLine(await cacheStaleness(valkey.url, rounds)));
  } finally {
    await valkey.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error('staleness bench failed:', err);
    process.exit(1);
  });
}
