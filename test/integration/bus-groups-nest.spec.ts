import 'reflect-metadata';
import { Inject, Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { BusService, EchoMqModule, OnEvent, type BusEvent } from '../../src/index.js';
import { GroupOrchestrator } from '../../src/nest/consumer-group-orchestrator.js';
import { eventually, randomQueue, rawClient, testUrl } from '../helpers/valkey.js';
import { pendingCount } from './bus-groups.helpers.js';

const TOPIC = randomQueue('orders');
const WHO = 'WHO';

/** (app, event id) per handled event, per group. */
const shared: [string, string][] = [];
const audit: [string, string][] = [];

@Injectable()
class SharedWorker {
  constructor(@Inject(WHO) private readonly who: string) {}

  @OnEvent(TOPIC, { group: 'shared', concurrency: 4, ackTimeoutMs: 1000 })
  async handle(e: BusEvent<{ n: number }>): Promise<void> {
    shared.push([this.who, e.id]);
    await new Promise((r) => setTimeout(r, 2));
  }
}

@Injectable()
class AuditWorker {
  constructor(@Inject(WHO) private readonly who: string) {}

  @OnEvent(TOPIC, { group: 'audit', ackTimeoutMs: 1000 })
  async handle(e: BusEvent): Promise<void> {
    audit.push([this.who, e.id]);
  }
}

async function boot(who: string, workers: (typeof SharedWorker | typeof AuditWorker)[]): Promise<INestApplication> {
  const mod = await Test.createTestingModule({
    imports: [EchoMqModule.forRoot({ connection: { url: testUrl() }, bus: { instance: who }, shutdownTimeoutMs: 2000 })],
    providers: [{ provide: WHO, useValue: who }, ...workers],
  }).compile();
  const app = mod.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('@OnEvent groups in Nest apps', () => {
  it('shares a group between two app instances and delivers every event to each group', async () => {
    const a = await boot('a', [SharedWorker, AuditWorker]);
    const b = await boot('b', [SharedWorker]);
    const raw = rawClient();
    try {
      const names = [a, b].map((app) => app.get(GroupOrchestrator).consumers.map((g) => g.consumer));
      expect(names[0]).toHaveLength(2);
      expect(names[0][0]).toMatch(/-a$/);
      expect(names[1][0]).toMatch(/-b$/);

      // Published through BusService (publish.lua), in three atomic batches.
      const bus = a.get(BusService);
      const ids: string[] = [];
      for (let b = 0; b < 3; b++) ids.push(...(await bus.publishMany(TOPIC, Array.from({ length: 100 }, (_, i) => ({ n: b * 100 + i })))));
      await eventually(() => new Set(shared.map(([, id]) => id)).size === ids.length, 20_000, 'every event in the shared group');
      await eventually(() => audit.length === ids.length, 20_000, 'every event in the audit group');
      await eventually(async () => (await pendingCount(raw, TOPIC, 'shared')) + (await pendingCount(raw, TOPIC, 'audit')) === 0, 10_000, 'all acked');

      // Each event once overall in the shared group, and both instances took some.
      expect(shared).toHaveLength(ids.length);
      expect(shared.filter(([w]) => w === 'a').length).toBeGreaterThan(0);
      expect(shared.filter(([w]) => w === 'b').length).toBeGreaterThan(0);
      expect(audit.map(([, id]) => id).sort()).toEqual([...ids].sort());
    } finally {
      raw.disconnect();
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('refuses hostile names and bad group options at decoration time', () => {
    const decorate = (topic: string, options: object) => () => OnEvent(topic, options as never);
    for (const t of ['', 'a b', '{x}', 'x'.repeat(101), 'a\nb']) expect(decorate(t, { group: 'g' })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    for (const g of ['', 'g*', 'x'.repeat(101), undefined]) expect(decorate('t', { group: g })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_NAME' }));
    expect(decorate('t', { group: 'g', concurency: 2 })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION', message: 'unknown group options: concurency' }));
    const bad = [{ concurrency: 0 }, { concurrency: 1001 }, { concurrency: 1.5 }, { maxDeliveries: 0 }, { maxDeliveries: '5' }, { ackTimeoutMs: 99 }, { from: 'yesterday' }, { from: new Date(Number.NaN) }];
    for (const o of bad) expect(decorate('t', { group: 'g', ...o })).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
    expect(decorate('t', null as never)).toThrow(expect.objectContaining({ code: 'EMQ_BAD_OPTION' }));
  });
});
