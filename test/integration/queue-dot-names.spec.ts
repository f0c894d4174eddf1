/**
 * "." and ".." are refused as names (issue 38): they are URL path segments, so a queue of that
 * name could be written and never reached in the dashboard. The TypeScript key grammar refuses
 * them before any I/O; the Lua grammar is unchanged (docs/protocol.md §2).
 */
import { BusService, QueueService } from '../../src/index.js';
import { BUILTIN_DEFAULTS, resolveDefaults } from '../../src/unstable.js';
import { globalKeys } from '../../src/protocol.js';
import type { EchoMqConnection } from '../../src/protocol.js';
import { openConnection, queueKeysIn, rawClient } from '../helpers/valkey.js';

const codeOf = async (act: () => Promise<unknown>): Promise<string | undefined> =>
  act().then(
    () => undefined,
    (e: { code?: string }) => e.code,
  );

describe('the names "." and ".."', () => {
  let conn: EchoMqConnection;
  beforeAll(async () => {
    conn = await openConnection();
  });
  afterAll(async () => {
    await conn.close();
  });

  it('are refused by enqueue, enqueueMany, flow and publish with EMQ_BAD_NAME, and nothing is written', async () => {
    const queues = new QueueService(conn, resolveDefaults(BUILTIN_DEFAULTS, {}));
    const bus = new BusService(conn, {});
    for (const name of ['.', '..']) {
      expect(await codeOf(() => queues.enqueue(name, { n: 1 }))).toBe('EMQ_BAD_NAME');
      expect(await codeOf(() => queues.enqueueMany(name, [{ payload: 1 }]))).toBe('EMQ_BAD_NAME');
      expect(await codeOf(() => queues.flow({ queue: name, payload: 1, children: [] }))).toBe('EMQ_BAD_NAME');
      expect(await codeOf(() => queues.flow({ queue: 'dot-parent', payload: 1, children: [{ queue: name, payload: 2 }] }))).toBe('EMQ_BAD_NAME');
      expect(await codeOf(() => bus.publish(name, 1))).toBe('EMQ_BAD_NAME');
    }
    const raw = rawClient();
    try {
      expect(await queueKeysIn(raw, '.')).toEqual([]);
      expect(await queueKeysIn(raw, '..')).toEqual([]);
      expect(await raw.zscore(globalKeys.queues, '..')).toBeNull();
      expect(await raw.zscore(globalKeys.queues, '.')).toBeNull();
    } finally {
      raw.disconnect();
    }
  });
});
