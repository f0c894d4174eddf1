import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { ValkeyUnavailableError } from '../../src/core/errors.js';
import { cli, startEmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { startValkeyCluster } from '../../src/testing/valkey-cluster.js';
import { alive } from '../helpers/child.js';

describe('startValkeyCluster', () => {
  it('starts 3 primaries covering all 16384 slots, answers ownerOf like the servers, and stops by pid (idempotently)', async () => {
    const t0 = Date.now();
    const c = await startValkeyCluster({ primaries: 3 });
    try {
      expect(Date.now() - t0).toBeLessThan(20_000);
      const primaries = await c.primaries();
      expect(primaries).toHaveLength(3);
      expect(c.nodes.every((n) => n.host === '127.0.0.1' && n.alive && alive(n.pid))).toBe(true);
      const covered = primaries.flatMap((p) => p.slots).reduce((sum, [lo, hi]) => sum + hi - lo + 1, 0);
      expect(covered).toBe(16384);
      for (const p of primaries) expect(String(await c.admin(p).call('CLUSTER', 'INFO'))).toContain('cluster_state:ok');
      // ownerOf agrees with every server: the owner accepts a write, the others redirect it.
      const key = 'emq:{orders}:meta';
      const owner = await c.ownerOf(key);
      for (const p of primaries) {
        const wrote = c.admin(p).set(key, 'x');
        if (p.port === owner.port) await expect(wrote).resolves.toBe('OK');
        else await expect(wrote).rejects.toThrow(/MOVED \d+ 127\.0\.0\.1:(\d+)/);
      }
      expect(c.seeds).toHaveLength(3);
    } finally {
      await c.stop();
      await c.stop();
    }
    expect(c.nodes.some((n) => alive(n.pid))).toBe(false);
  }, 60_000);

  it('refuses fewer than 3 primaries; a start that fails or times out stops every server it started', async () => {
    await expect(startValkeyCluster({ primaries: 2 })).rejects.toThrow(ValkeyUnavailableError);
    await expect(startValkeyCluster({ args: ['--no-such-option', 'x'] })).rejects.toThrow(/failed to start/);
    // Servers up, then the join times out: they are all stopped (valkey-server titles itself "… [cluster]").
    const clusterServers = () => new Set(spawnSync('pgrep', ['-f', String.raw`valkey-server .*\[cluster\]`], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean));
    const before = clusterServers();
    await expect(startValkeyCluster({ waitMs: 1 })).rejects.toThrow(ValkeyUnavailableError);
    expect([...clusterServers()].filter((pid) => !before.has(pid))).toEqual([]);
  }, 30_000);

  it('starts a cluster-mode node on a port above 55535 (whose default bus port, port + 10000, does not exist)', async () => {
    let high = 0;
    for (let p = 55_536 + Math.floor(Math.random() * 4000); p < 65_000 && !high; p++) {
      if (await canBind(p)) high = p;
    }
    const node = await startEmbeddedValkey({ cluster: true, port: high });
    try {
      expect(cli(node.port, 'CLUSTER', 'INFO')).toContain('cluster_state:ok');
    } finally {
      await node.stop();
    }
  }, 30_000);
});

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}
