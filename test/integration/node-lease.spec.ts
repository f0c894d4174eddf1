import { EchoMqConnection } from '../../src/protocol/connection.js';
import { globalKeys } from '../../src/protocol/keys.js';
import { wire } from '../../src/protocol/wire.js';
import { parseId } from '../../src/protocol/ids.js';
import { rawClient, testUrl } from '../helpers/valkey.js';

describe('node numbers are leased, never shared by two live processes', () => {
  it('gives each open connection its own node number, stamped into its ids', async () => {
    const conns = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const c = new EchoMqConnection({ url: testUrl() });
        await c.open();
        return c;
      }),
    );
    try {
      const nodes = conns.map((c) => c.node);
      expect(new Set(nodes).size).toBe(4);
      conns.forEach((c, i) => expect(parseId(c.ids.next('job')).node).toBe(nodes[i]));
    } finally {
      await Promise.all(conns.map((c) => c.close()));
    }
  });

  it('refuses to renew a number leased to another owner, and renews its own', async () => {
    const conn = new EchoMqConnection({ url: testUrl() });
    await conn.open();
    const raw = rawClient();
    try {
      const n = await wire.node(conn.scriptClient, 'someone-else', 5000);
      expect(n).toBeGreaterThanOrEqual(0);
      expect(await raw.get(globalKeys.nodePrefix + n)).toBe('someone-else');
      expect(await wire.node(conn.scriptClient, 'intruder', 5000, n)).toBe(-1);
      expect(await wire.node(conn.scriptClient, 'someone-else', 5000, n)).toBe(n);
      expect(await raw.pttl(globalKeys.nodePrefix + n)).toBeGreaterThan(4000);
      await raw.del(globalKeys.nodePrefix + n);
    } finally {
      raw.disconnect();
      await conn.close();
    }
  });
});
