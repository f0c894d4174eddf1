import 'reflect-metadata';
import { Injectable, Module, type INestApplication, type OnModuleInit } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { EchoMqModule, InjectQueue, Processor, Queue, QueueService, getQueueToken, type Job } from '../../src/index.js';
import { CapturedLogs, startApp } from '../helpers/nest.js';
import { eventually, randomQueue, testUrl } from '../helpers/valkey.js';

interface OrderInput {
  readonly sku: string;
  readonly qty: number;
}
interface OrderResult {
  readonly total: number;
}

const ORDERS = randomQueue('orders');
const CONSUMED = randomQueue('consumed');
const UNKNOWN = randomQueue('unknown');

@Injectable()
class OrderDesk {
  constructor(@InjectQueue(ORDERS) readonly orders: Queue<OrderInput, OrderResult>) {}
}

@Injectable()
class OrderWorker {
  @Processor(ORDERS)
  async price(job: Job<OrderInput>): Promise<OrderResult> {
    return { total: job.payload.qty * 10 };
  }

  @Processor(CONSUMED)
  async consume(): Promise<void> {}
}

@Module({ imports: [EchoMqModule.forFeature([{ name: ORDERS, defaults: { attempts: 2 } }])], providers: [OrderDesk, OrderWorker] })
class OrdersModule {}

/** Compile-time only (typecheck covers test/): a handle refuses a payload of the wrong type. */
export function handleTypes(desk: OrderDesk): void {
  // @ts-expect-error qty must be a number
  void desk.orders.enqueue({ sku: 'a', qty: 'two' });
  // @ts-expect-error sku is required
  void desk.orders.enqueueMany([{ payload: { qty: 1 } }]);
  void desk.orders.getJob('x').then((j) => {
    // @ts-expect-error the result is an OrderResult, which has no `count`
    void j?.result?.count;
  });
}

function boot(logs: CapturedLogs, extra: { warnUnknownQueues?: boolean } = {}): Promise<INestApplication> {
  return startApp([EchoMqModule.forRoot({ connection: { url: testUrl() }, shutdownTimeoutMs: 1000, ...extra }), OrdersModule], [], logs);
}

describe('typed queue handles (forFeature + @InjectQueue)', () => {
  it('injects a handle typed by payload and result that delegates to QueueService', async () => {
    const logs = new CapturedLogs();
    const app = await boot(logs);
    try {
      const { orders } = app.get(OrderDesk);
      expect(orders).toBeInstanceOf(Queue);
      expect(app.get(getQueueToken(ORDERS))).toBe(orders);
      expect(orders.name).toBe(ORDERS);
      expect(orders.settings.attempts).toBe(2); // the registration's defaults
      expect(app.get(QueueService).settings(ORDERS).attempts).toBe(2);
      const id = await orders.enqueue({ sku: 'a', qty: 3 });
      const [id2] = await orders.enqueueMany([{ payload: { sku: 'b', qty: 1 } }]);
      await eventually(async () => (await orders.counts()).done === 2, 5000, 'both done');
      const job = await orders.getJob(id);
      expect(job?.payload).toEqual({ sku: 'a', qty: 3 });
      const total: number | undefined = job?.result?.total;
      expect(total).toBe(30);
      expect((await app.get(QueueService).getJob(ORDERS, id2))?.result).toEqual({ total: 10 });
      expect(await orders.cancel(id)).toBe('finished');
    } finally {
      await app.close();
    }
  });

  it('refuses bad registrations at startup with typed errors', async () => {
    expect(() => EchoMqModule.forFeature([{ name: 'bad name' }])).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    expect(() => EchoMqModule.forFeature([{ name: 'ok', prio: 1 } as never])).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(() => EchoMqModule.forFeature([{ name: 'ok', defaults: { attempts: 0 } }])).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(() => InjectQueue('')).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    // The same queue registered twice with different defaults.
    const q = randomQueue('twice');
    @Module({ imports: [EchoMqModule.forFeature([{ name: q, defaults: { attempts: 2 } }])] })
    class A {}
    @Module({ imports: [EchoMqModule.forFeature([{ name: q, defaults: { attempts: 5 } }])] })
    class B {}
    await expect(
      Test.createTestingModule({ imports: [EchoMqModule.forRoot({ connection: { url: testUrl() }, consumers: false }), A, B] }).compile(), // lazy: nothing to leak
    ).rejects.toMatchObject({ code: 'EMQ_BAD_OPTION' });
  });

  it('warns once per queue that nobody registered or consumes', async () => {
    const logs = new CapturedLogs();
    const app = await boot(logs);
    try {
      const queues = app.get(QueueService);
      for (let i = 0; i < 3; i++) await queues.enqueue(UNKNOWN, { i });
      await queues.enqueueMany(UNKNOWN, [{ payload: 1 }]);
      await queues.enqueue(ORDERS, { sku: 'c', qty: 1 }); // registered
      await queues.enqueue(CONSUMED, {}); // consumed by a @Processor
      const warned = logs.find('warn', 'enqueued to queue');
      expect(warned).toHaveLength(1);
      expect(warned[0]).toContain(`"${UNKNOWN}"`);
      expect(warned[0]).toContain('warnUnknownQueues');
    } finally {
      await app.close();
    }
  });

  it('settles enqueues made before bootstrap at bootstrap (a consumed queue is not warned about)', async () => {
    const early = randomQueue('early');
    @Injectable()
    class EarlyProducer implements OnModuleInit {
      constructor(private readonly queues: QueueService) {}
      async onModuleInit(): Promise<void> {
        await this.queues.enqueue(early, {});
        await this.queues.enqueue(CONSUMED, {}); // consumed, though its @Processor may not be discovered yet
      }
    }
    const logs = new CapturedLogs();
    const app = await startApp([EchoMqModule.forRoot({ connection: { url: testUrl() }, shutdownTimeoutMs: 1000 }), OrdersModule], [EarlyProducer], logs);
    try {
      const warned = logs.find('warn', 'enqueued to queue');
      expect(warned).toHaveLength(1);
      expect(warned[0]).toContain(`"${early}"`);
    } finally {
      await app.close();
    }
  });

  it('stays silent with warnUnknownQueues: false', async () => {
    const logs = new CapturedLogs();
    const app = await boot(logs, { warnUnknownQueues: false });
    try {
      await app.get(QueueService).enqueue(randomQueue('silent'), {});
      expect(logs.find('warn', 'enqueued to queue')).toEqual([]);
    } finally {
      await app.close();
    }
  });
});
