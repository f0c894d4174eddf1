import type { Redis } from 'iovalkey';
import { BusService } from '../../src/index.js';
import { topicKeys } from '../../src/protocol.js';
import { deadLetter } from '../../src/bus/consumer-group/group-wire.js';
import { eventIdOf } from '../../src/core/event-id.js';
import type { EchoMqConnection } from '../../src/core/connection/connection.js';
import type { Json } from '../../src/core/codec.js';

/**
 * Publishes one event per payload to `topic`, delivers them to group `g1` (XREADGROUP) and
 * dead-letters each with the real script (dead-letter.lua): resolves to the dead ids, oldest first.
 */
export async function deadLetters(conn: EchoMqConnection, raw: Redis, topic: string, payloads: Json[], error = 'Error: handler failed'): Promise<string[]> {
  const bus = new BusService(conn, { trimIntervalMs: 0 });
  const k = topicKeys(topic);
  try {
    for (const p of payloads) await bus.publish(topic, p);
    await raw.xgroup('CREATE', k.log, 'g1', '0');
    const read = (await raw.xreadgroup('GROUP', 'g1', 'c1', 'COUNT', payloads.length, 'STREAMS', k.log, '>')) as [string, [string, string[]][]][];
    for (const [streamId] of read[0][1]) {
      const r = await deadLetter(conn.scriptClient, k, { group: 'g1', consumer: 'c1', streamId, eventId: eventIdOf(streamId), error, minIdleMs: 0, deadCap: 1000 });
      if (r.status !== 1) throw new Error(`dead-letter.lua answered ${r.status} for ${streamId}`);
    }
  } finally {
    await bus.close();
  }
  return ((await raw.xrange(k.dead, '-', '+')) as [string, string[]][]).map(([id]) => id);
}

