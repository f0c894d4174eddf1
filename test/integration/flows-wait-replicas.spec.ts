import { Redis } from 'iovalkey';
import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import type { FlowOptions } from '../../src/queue/flows/flow-service.js';
import type { Consumer } from '../../src/queue/consumer/consumer.js';
import { startConsumer } from '../helpers/consumers.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

const FLOWS = 150;
const CHILDREN = 10;

interface Run {
  readonly ms: number;
  /** The slowest PING on the shared command connection while the flows ran (ms). */
  readonly pingMax: number;
  readonly svc: QueueService;
  readonly queues: readonly string[];
  readonly warnings: string[];
}

describe('flows: waitReplicas waits on the relay\'s own connection, bounded, and never relays forever', () => {
  let primary: EmbeddedValkey;
  let replica: EmbeddedValkey | undefined;
  let conn: EchoMqConnection;
  let raw: Redis;
  const consumers: Consumer[] = [];
  const services: QueueService[] = [];

  beforeAll(async () => {
    primary = await startEmbeddedValkey();
    conn = new EchoMqConnection({ url: primary.url });
    await conn.open();
    raw = new Redis(primary.url, { maxRetriesPerRequest: 1 });
  }, 30_000);

  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((c) => c.stop(1000)));
    await Promise.all(services.splice(0).map((s) => s.flows.close()));
  });

  afterAll(async () => {
    if (replica) process.kill(replica.pid, 'SIGCONT');
    await conn?.close();
    raw?.disconnect();
    await replica?.stop();
    await primary?.stop();
  });

  /** 150 flows of 10 children each, created in one flowMany and run to their end; timed. */
  async function run(opts: FlowOptions): Promise<Run> {
    const warnings: string[] = [];
    const svc = new QueueService(conn, undefined, undefined, { ...opts, logger: { warn: (m) => warnings.push(m) } });
    services.push(svc);
    const [p, c] = [randomQueue('wrp'), randomQueue('wrc')];
    const relay = svc.flows.relay;
    for (const [q, n] of [[p, 8], [c, 32]] as const) {
      const handoff = { leaseMs: relay.leaseMs, relay: (es: readonly { id: string; text: string }[]) => relay.relayTaken(q, es) };
      consumers.push((await startConsumer(conn, q, () => 1, { concurrency: n, handoff })).consumer);
    }
    let pingMax = 0;
    let pinging = true;
    const pinger = (async () => {
      while (pinging) {
        const t = performance.now();
        await conn.client.ping();
        pingMax = Math.max(pingMax, performance.now() - t);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const t0 = performance.now();
    const specs = Array.from({ length: FLOWS }, () => ({ queue: p, payload: {}, children: Array.from({ length: CHILDREN }, () => ({ queue: c, payload: {} })) }));
    await svc.flowMany(specs);
    await eventually(async () => (await svc.counts(p)).done === FLOWS, 60_000, 'every parent to run');
    const ms = performance.now() - t0;
    pinging = false;
    await pinger;
    return { ms, pingMax, svc, queues: [p, c], warnings };
  }

  const drained = (queues: readonly string[]) => async () => {
    for (const q of queues) if ((await raw.hlen(`emq:{${q}}:outbox`)) > 0) return false;
    return true;
  };

  it('without a replica, waitReplicas: 1 costs no more than 2x waitReplicas: 0, and every entry is acknowledged or reported', async () => {
    const off = await run({});
    const on = await run({ waitReplicas: 1, leaseMs: 300, sweepMs: 100 });
    process.stdout.write(`waitReplicas 0: ${off.ms.toFixed(0)} ms (ping max ${off.pingMax.toFixed(1)} ms); waitReplicas 1, no replica: ${on.ms.toFixed(0)} ms (ping max ${on.pingMax.toFixed(1)} ms)\n`);
    expect(on.ms).toBeLessThanOrEqual(2 * off.ms + 1000); // noisy machine: 2x plus a fixed slack
    // Unconfirmed entries are relayed again for 5 leases (1.5 s here), then acknowledged and reported.
    await eventually(drained(on.queues), 10_000, 'every entry to be acknowledged');
    expect(on.svc.flows.relay.unconfirmed).toBeGreaterThan(0);
    expect(on.warnings.join('\n')).toMatch(/acknowledged without 1 replica\(s\) confirming/);
    await eventually(drained(off.queues), 5000, 'every entry to be acknowledged');
  }, 120_000);

  it('with a replica that stopped answering, WAIT times out on the relay\'s own connection: other commands never queue behind it', async () => {
    replica = await startEmbeddedValkey({ args: ['--replicaof', primary.host, String(primary.port)] });
    await eventually(async () => /connected_slaves:1/.test(await raw.info('replication')), 10_000, 'the replica to attach');
    const off = await run({});
    process.kill(replica.pid, 'SIGSTOP'); // still counted as connected: every WAIT runs to its timeout
    const on = await run({ waitReplicas: 1, waitTimeoutMs: 1000, leaseMs: 300, sweepMs: 100 });
    process.kill(replica.pid, 'SIGCONT');
    process.stdout.write(`replica stopped: waitReplicas 0: ${off.ms.toFixed(0)} ms; waitReplicas 1 (WAIT 1000 ms): ${on.ms.toFixed(0)} ms, ping max ${on.pingMax.toFixed(1)} ms\n`);
    // A WAIT on the shared connection would hold a PING behind it for up to its 1000 ms timeout.
    expect(on.pingMax).toBeLessThan(700);
    // Each relay batch waits at most two WAIT timeouts (group commit), behind which only relay traffic queues.
    expect(on.ms).toBeLessThanOrEqual(2 * off.ms + 4000);
    await eventually(drained(on.queues), 10_000, 'every entry to be acknowledged');
  }, 120_000);
});
