import type { Subscription } from 'rxjs';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { FatalJobError } from '../../src/queue/job-signals.js';
import { queueKeys } from '../../src/core/keys.js';
import type { QueueEvent } from '../../src/queue/job.js';
import { BUILTIN_DEFAULTS, resolveDefaults } from '../../src/queue/queue-options.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startEmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { startConsumer } from '../helpers/consumers.js';
import { eventually, openConnection, randomQueue, rawClient } from '../helpers/valkey.js';

/** Runs a job that succeeds and one that fails fatally, collecting the queue's events. */
async function runLifecycle(conn: EchoMqConnection, queues: QueueService, q: string): Promise<QueueEvent[]> {
  const seen: QueueEvent[] = [];
  const sub: Subscription = queues.events(q).subscribe((e) => seen.push(e));
  // The subscription is asynchronous (and signals are at most once): enqueue delayed probes
  // until one is seen, then cancel them all at the end.
  const probes: string[] = [];
  await eventually(
    async () => {
      probes.push(await queues.enqueue(q, { probe: true }, { delay: 60_000 }));
      await new Promise((r) => setTimeout(r, 50));
      return seen.some((e) => e.kind === 'scheduled');
    },
    5000,
    'subscription',
  );
  const probe = probes[probes.length - 1];
  const ok = await queues.enqueue(q, { ok: true });
  const bad = await queues.enqueue(q, { ok: false });
  const { consumer } = await startConsumer(conn, q, (job) => {
    if (!(job.payload as { ok: boolean }).ok) throw new FatalJobError('no');
    return 'fine';
  });
  try {
    await eventually(() => seen.some((e) => e.kind === 'buried') && seen.some((e) => e.kind === 'completed'), 5000, 'events');
    for (const p of probes) expect(await queues.cancel(q, p)).toBe('cancelled');
    await eventually(() => seen.some((e) => e.kind === 'cancelled' && e.ids.includes(probe)), 3000, 'cancel event');
  } finally {
    await consumer.stop(1000);
    sub.unsubscribe();
  }
  const idsOf = (kind: string) => seen.filter((e) => e.kind === kind).flatMap((e) => e.ids);
  expect(idsOf('enqueued')).toEqual([ok, bad]);
  expect(idsOf('claimed').sort()).toEqual([ok, bad].sort());
  expect(idsOf('completed')).toEqual([ok]);
  expect(idsOf('buried')).toEqual([bad]);
  expect(idsOf('cancelled')).toContain(probe);
  expect(idsOf('scheduled')).toContain(probe);
  for (const e of seen) expect(e.at).toBeInstanceOf(Date);
  return seen;
}

describe('queue lifecycle events', () => {
  it('signals every transition; without eventsLog nothing is logged', async () => {
    const conn = await openConnection();
    const raw = rawClient();
    try {
      const q = randomQueue('ev');
      await runLifecycle(conn, new QueueService(conn), q);
      expect(await raw.exists(queueKeys(q).events)).toBe(0);
    } finally {
      raw.disconnect();
      await conn.close();
    }
  });

  it('with eventsLog, every transition is also appended to the bounded lifecycle stream', async () => {
    const conn = await openConnection();
    const raw = rawClient();
    try {
      const q = randomQueue('evlog');
      const queues = new QueueService(conn, resolveDefaults(BUILTIN_DEFAULTS, { eventsLog: 100 }));
      await runLifecycle(conn, queues, q);
      const entries = await raw.xrange(queueKeys(q).events, '-', '+');
      const kinds = entries.map(([, fields]) => fields[fields.indexOf('e') + 1]);
      expect(kinds).toEqual(expect.arrayContaining(['scheduled', 'enqueued', 'claimed', 'completed', 'buried', 'cancelled']));
      expect(await raw.hget(queueKeys(q).meta, 'elog')).toBe('100');
    } finally {
      raw.disconnect();
      await conn.close();
    }
  });

  it('reaches a subscriber on a cluster node too (sharded pub/sub from inside the scripts)', async () => {
    const server = await startEmbeddedValkey({ cluster: true });
    const conn = new EchoMqConnection({ cluster: [{ host: server.host, port: server.port }] });
    try {
      await conn.open();
      const queues = new QueueService(conn);
      const q = randomQueue('evcl');
      const seen: string[] = [];
      const sub = queues.events(q).subscribe((e) => seen.push(...(e.kind === 'enqueued' ? e.ids : [])));
      const ids: string[] = [];
      await eventually(
        async () => {
          ids.push(await queues.enqueue(q, { x: ids.length }));
          await new Promise((r) => setTimeout(r, 50));
          return seen.length > 0;
        },
        5000,
        'an enqueued event',
      );
      sub.unsubscribe();
      expect(ids).toEqual(expect.arrayContaining(seen));
    } finally {
      await conn.close();
      await server.stop();
    }
  });
});
