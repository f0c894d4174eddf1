import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { firstValueFrom, filter, take, toArray } from 'rxjs';
import { EchoMqConnection, queueKeys } from '../../src/protocol.js';
import { EchoMqModule, Flow, Processor, QueueService, type FlowJob, type Job, type QueueEvent } from '../../src/index.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

const ORDERS = randomQueue('orders');
const CHECKS = randomQueue('checks');
const TOTALS = randomQueue('totals');
const FANOUT = randomQueue('fanout');

@Injectable()
class Steps {
  readonly settled: { id: string; keys: string[]; total: number }[] = [];
  readonly totals: number[] = [];

  @Processor(CHECKS, { concurrency: 4 })
  check(job: Job<{ price: number }>): { price: number } {
    return { price: job.payload.price };
  }

  /** A nested parent: sums its checks, and its result flows up to the order. */
  @Flow(TOTALS)
  total(job: FlowJob<unknown, { price: number }>): number {
    const sum = job.children.list.reduce((s, c) => s + (c.result?.price ?? 0), 0);
    this.totals.push(sum);
    return sum;
  }

  readonly fanRuns: number[] = [];

  /** Fans out from its running job on the first run; sums on the second. */
  @Flow(FANOUT)
  fan(job: FlowJob<{ prices: number[] }, { price: number }>): Promise<never> | number {
    this.fanRuns.push(job.children.list.length);
    if (job.children.list.length === 0) return job.waitFor(job.payload.prices.map((price) => ({ queue: CHECKS, payload: { price } })));
    return job.children.list.reduce((s, c) => s + (c.result?.price ?? 0), 0);
  }

  @Flow(ORDERS, { concurrency: 2 })
  settle(job: FlowJob<{ order: string }, unknown>): { order: string; total: number } {
    const total = (job.children.byKey.subtotal?.result as number) + (job.children.byKey.fee?.result as { price: number }).price;
    this.settled.push({ id: job.id, keys: Object.keys(job.children.byKey).sort(), total });
    return { order: job.payload.order, total };
  }
}

describe('@Flow: the parent step of a flow through the NestJS module', () => {
  let queues: QueueService;
  let steps: Steps;
  let conn: EchoMqConnection;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const mod = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { url: testUrl() } })],
      providers: [Steps],
    }).compile();
    const app = mod.createNestApplication({ logger: false });
    await app.init();
    queues = app.get(QueueService);
    steps = app.get(Steps);
    conn = app.get(EchoMqConnection);
    close = () => app.close();
  });

  afterAll(async () => {
    await close?.();
  });

  it('runs the step once with its children results by key; a nested step\'s result flows up', async () => {
    const events = firstValueFrom(queues.events(ORDERS).pipe(filter((e: QueueEvent) => e.kind === 'waiting' || e.kind === 'released'), take(2), toArray()));
    // The subscription is asynchronous: wait until the server counts it.
    const channel = queueKeys(ORDERS).events;
    await eventually(async () => ((await conn.client.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number])[1] > 0, 5000, 'the subscription');
    const flow = await queues.flow({
      queue: ORDERS,
      payload: { order: 'o-1' },
      children: [
        { queue: TOTALS, key: 'subtotal', payload: {}, children: [1, 2, 3].map((price) => ({ queue: CHECKS, payload: { price } })) },
        { queue: CHECKS, key: 'fee', payload: { price: 10 } },
      ],
    });
    await eventually(async () => (await queues.getJob(ORDERS, flow.id))?.status === 'done', 15_000, 'the order to settle');
    expect(steps.totals).toEqual([6]);
    expect(steps.settled).toEqual([{ id: flow.id, keys: ['fee', 'subtotal'], total: 16 }]);
    expect((await queues.getJob(ORDERS, flow.id))?.result).toEqual({ order: 'o-1', total: 16 });
    const seen = await events;
    expect(seen.map((e) => [e.kind, e.ids])).toEqual([
      ['waiting', [flow.id]],
      ['released', [flow.id]],
    ]);
  });

  it('a @Flow step fans out from its running job with job.waitFor and runs again with the results', async () => {
    const id = await queues.enqueue(FANOUT, { prices: [4, 5, 6] });
    await eventually(async () => (await queues.getJob(FANOUT, id))?.status === 'done', 15_000, 'the fan-out to finish');
    expect((await queues.getJob(FANOUT, id))?.result).toBe(15);
    expect(steps.fanRuns).toEqual([0, 3]);
  });
});
