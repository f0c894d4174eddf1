/**
 * The Nest options write a queue's stored policy at bootstrap (docs/protocol.md §5, "Policy
 * lives in the data"), also in an app that only produces: two apps (two connections, as two
 * processes) declaring different policies leave one rule — the later one's, which it warns about
 * naming both — never a silent mix; an app that declares nothing leaves the stored policy alone.
 */
import type { INestApplication } from '@nestjs/common';
import { EchoMqModule, QueueService } from '../../src/index.js';
import { lanePolicyWire } from '../../src/queue/lane-policy.js';
import { CapturedLogs, startApp } from '../helpers/nest.js';
import { randomQueue, testUrl } from '../helpers/valkey.js';

describe('the queue policy declared in the Nest options', () => {
  const apps: INestApplication[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });
  const app = async (queues: Record<string, object>, logs = new CapturedLogs()) => {
    const a = await startApp([EchoMqModule.forRoot({ connection: { url: testUrl() }, consumers: false, queues })], [], logs);
    apps.push(a);
    return { service: a.get(QueueService), logs };
  };

  it('a producer-only app stores its declared policy at bootstrap; a second app with another one replaces it and warns; an app declaring none changes nothing', async () => {
    const q = randomQueue('pnest');
    const first = await app({ [q]: { lanes: { concurrency: 2 }, rateLimit: { max: 100, intervalMs: 1000 } } });
    expect(await first.service.policy(q)).toEqual({ rateLimit: { max: 100, intervalMs: 1000 }, lanePolicy: lanePolicyWire({ concurrency: 2 }) });
    expect(first.logs.find('warn', 'replaced')).toEqual([]);

    const second = await app({ [q]: { lanes: { concurrency: 3 } } });
    expect(await first.service.policy(q)).toEqual({ lanePolicy: lanePolicyWire({ concurrency: 3 }) });
    const warned = second.logs.find('warn', `queue "${q}"`);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(/replaced the stored one \(rate 100\/1000 ms, lanes/);

    const silent = await app({});
    expect(await silent.service.policy(q)).toEqual({ lanePolicy: lanePolicyWire({ concurrency: 3 }) });
    // The same declaration again is no change and no warning.
    const again = await app({ [q]: { lanes: { concurrency: 3 } } });
    expect(again.logs.find('warn', `queue "${q}"`)).toEqual([]);
  });
});
