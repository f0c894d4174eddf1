/**
 * Every connection EchoMQ opens is named (`CLIENT SETNAME emq:<role>:<node>`), so an operator can
 * tell them apart in `CLIENT LIST`: the command connection (`cmd`), the blocking ones of queue
 * consumers and bus groups (`block`), the subscribers of signals and cache coherence (`sub`).
 * A running app on a Valkey of its own: every client but the test's admin carries such a name.
 */
import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'iovalkey';
import { BusService, CacheService, EchoMqModule, OnEvent, Processor, QueueService } from '../../src/index.js';
import { EchoMqConnection } from '../../src/protocol.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/testing.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const Q = randomQueue('names');
const TOPIC = randomQueue('names-topic');
let handled = 0;

@Injectable()
class Workers {
  @Processor(Q)
  job(): void {
    handled++;
  }

  @OnEvent(TOPIC, { group: 'g' })
  async event(): Promise<void> {
    handled++;
  }
}

/** name → count of the clients connected now, except the admin. */
async function names(raw: Redis): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const line of String(await raw.client('LIST')).split('\n')) {
    const name = / name=(\S*)/.exec(line)?.[1];
    if (name === undefined || name === 'test-admin') continue;
    out[name] = (out[name] ?? 0) + 1;
  }
  return out;
}

describe('connection names', () => {
  let valkey: EmbeddedValkey;
  let raw: Redis;
  beforeAll(async () => {
    valkey = await startEmbeddedValkey();
    raw = new Redis({ port: valkey.port, connectionName: 'test-admin' });
  });
  afterAll(async () => {
    raw.disconnect();
    await valkey.stop();
  });

  it('names every connection of a running app: queue consumer, bus group, signals, cache coherence', async () => {
    const mod = await Test.createTestingModule({
      imports: [EchoMqModule.forRoot({ connection: { port: valkey.port }, shutdownTimeoutMs: 1000 })],
      providers: [Workers],
    }).compile();
    const app = mod.createNestApplication({ logger: false });
    await app.init();
    try {
      const node = app.get(EchoMqConnection).node;
      const bus = app.get(BusService);
      const sub = bus.signals(randomQueue('names-signal')).subscribe();
      const cache = app.get(CacheService);
      await cache.getOrLoad('k', async () => 1); // watches the namespace: coherence subscribes
      await app.get(QueueService).enqueue(Q, { n: 1 });
      await bus.publish(TOPIC, { n: 1 });
      await eventually(() => handled === 2, 10_000, 'the job and the event');
      // One command connection, blocking ones for the consumer and the group, one subscriber (signals
      // and coherence share it). The subscriber is `emq:sub:<node>` once the signal hub asks for that
      // role (`blockingClient('sub')`); until then it is one more `emq:block:<node>`.
      const count = async () => Object.values(await names(raw)).reduce((a, b) => a + b, 0);
      await eventually(async () => (await count()) >= 4, 5000, 'the subscriber connection');
      const seen = await names(raw);
      expect(seen[`emq:cmd:${node}`]).toBe(1);
      expect((seen[`emq:block:${node}`] ?? 0) + (seen[`emq:sub:${node}`] ?? 0)).toBeGreaterThanOrEqual(3);
      for (const name of Object.keys(seen)) expect(name).toMatch(new RegExp(`^emq:(cmd|block|sub):${node}$`));
      sub.unsubscribe();
    } finally {
      await app.close();
    }
    expect(await names(raw)).toEqual({});
  });
});
