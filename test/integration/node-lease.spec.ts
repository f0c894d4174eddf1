import { EchoMqConnection } from '../../src/core/connection/connection.js';
import { globalKeys } from '../../src/core/keys.js';
import { wire } from '../../src/core/wire/queue.js';
import { parseId } from '../../src/core/ids.js';
import type { ScriptClient } from '../../src/core/scripts.js';
import { startEmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { Redis } from 'iovalkey';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { luaDir } from '../../src/core/scripts.js';
import { rawClient, testUrl } from '../helpers/valkey.js';
import { PROTOCOL_VERSION } from '../../src/core/scripts.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

  it('keeps leases in one hash without a TTL; refuses another owner, renews its own', async () => {
    const conn = new EchoMqConnection({ url: testUrl() });
    await conn.open();
    const raw = rawClient();
    try {
      const [owner, expires] = (await raw.hget(globalKeys.nodes, String(conn.node)))!.split(' ');
      expect(owner).toBe(conn.ids.owner);
      expect(Number(expires)).toBeGreaterThan(Date.now() + 50_000);
      expect(await raw.pttl(globalKeys.nodes)).toBe(-1);
      const n = await wire.node(conn.scriptClient, 'someone-else', 5000);
      expect(n).toBeGreaterThanOrEqual(0);
      expect(n).not.toBe(conn.node);
      expect(await wire.node(conn.scriptClient, 'intruder', 5000, n)).toBe(-1);
      expect(await wire.node(conn.scriptClient, 'someone-else', 5000, n)).toBe(n);
      expect(Number((await raw.hget(globalKeys.nodes, String(n)))!.split(' ')[1])).toBeGreaterThan(Date.now() + 4000);
      // Released: refused to anyone else for one more second, then free.
      expect(await wire.node(conn.scriptClient, 'intruder', 0, n)).toBe(-1);
      expect(await wire.node(conn.scriptClient, 'someone-else', 0, n)).toBe(n);
      expect(await wire.node(conn.scriptClient, 'intruder', 5000, n)).toBe(-1);
      await sleep(1100);
      expect(await wire.node(conn.scriptClient, 'intruder', 5000, n)).toBe(n);
      await raw.hdel(globalKeys.nodes, String(n));
    } finally {
      raw.disconnect();
      await conn.close();
    }
  });

  it('releases its number on close', async () => {
    const conn = new EchoMqConnection({ url: testUrl() });
    await conn.open();
    const n = conn.node;
    await conn.close();
    const raw = rawClient();
    try {
      const expires = Number((await raw.hget(globalKeys.nodes, String(n)))!.split(' ')[1]);
      expect(expires).toBeLessThanOrEqual(Date.now() + 1100);
    } finally {
      raw.disconnect();
    }
  });

  it('mints only while the lease is certain: a reconnect makes it uncertain until renewed', async () => {
    const conn = new EchoMqConnection({ url: testUrl() });
    await conn.open();
    const raw = rawClient();
    try {
      expect(conn.ids.certain).toBe(true);
      const id = String(await conn.client.client('ID'));
      const dropped = new Promise((r) => conn.client.once('close', r));
      await raw.client('KILL', 'ID', id);
      await dropped;
      expect(conn.ids.certain).toBe(false);
      expect(() => conn.ids.next('job')).toThrow(expect.objectContaining({ code: 'EMQ_NODE_LEASE' }));
      await conn.ids.ready();
      expect(conn.ids.certain).toBe(true);
      expect(parseId(conn.ids.next('job')).node).toBe(conn.node);
    } finally {
      raw.disconnect();
      await conn.close();
    }
  });

  it('a lease taken by another owner while this one was uncertain moves the process to a fresh number', async () => {
    const conn = new EchoMqConnection({ url: testUrl() }, { leaseMs: 1000 });
    await conn.open();
    const raw = rawClient();
    try {
      const n = conn.node;
      const before = conn.ids.next('job');
      await raw.hset(globalKeys.nodes, String(n), `intruder ${Date.now() + 60_000}`);
      await conn.ids.renew();
      expect(conn.node).not.toBe(n);
      const after = conn.ids.next('job');
      expect(parseId(after).node).toBe(conn.node);
      expect(after > before).toBe(true);
      expect(await raw.hget(globalKeys.nodes, String(n))).toMatch(/^intruder /);
      await raw.hdel(globalKeys.nodes, String(n));
    } finally {
      raw.disconnect();
      await conn.close();
    }
  });

  it('refuses a stale caller passing {emq}:node: (or any key but the two cluster-wide ones) with EMQ_BAD_ARG, writing nothing (a private server)', async () => {
    const v = await startEmbeddedValkey();
    const raw = new Redis(v.url, { maxRetriesPerRequest: 1 });
    const text = readFileSync(join(luaDir(), 'node.lua'), 'utf8');
    const call = (keys: string[], ...argv: (string | number)[]) => raw.eval(text, keys.length, ...keys, ...argv);
    try {
      // A live owner holds its number in the shared hash.
      const held = Number(await call([globalKeys.nodeSeq, globalKeys.nodes], PROTOCOL_VERSION, 'live', 60_000, ''));
      const before = [await raw.dbsize(), await raw.hgetall(globalKeys.nodes), await raw.get(globalKeys.nodeSeq)];
      for (const argv of [[PROTOCOL_VERSION, 'stale', 60_000, ''], [PROTOCOL_VERSION, 'stale', 60_000, held], [PROTOCOL_VERSION, 'live', 0, held]] as const) {
        await expect(call([globalKeys.nodeSeq, '{emq}:node:'], ...argv)).rejects.toThrow(/^EMQ_BAD_ARG /);
        await expect(call(['{emq}:node-seq:x', globalKeys.nodes], ...argv)).rejects.toThrow(/^EMQ_BAD_ARG /);
        await expect(call([globalKeys.nodes, globalKeys.nodeSeq], ...argv)).rejects.toThrow(/^EMQ_BAD_ARG /);
      }
      expect(await raw.exists('{emq}:node:')).toBe(0);
      expect([await raw.dbsize(), await raw.hgetall(globalKeys.nodes), await raw.get(globalKeys.nodeSeq)]).toEqual(before);
      // The number stays the live owner's: a second owner cannot take it through the shared hash.
      expect(await call([globalKeys.nodeSeq, globalKeys.nodes], PROTOCOL_VERSION, 'stale', 60_000, held)).toBe(-1);
    } finally {
      raw.disconnect();
      await v.stop();
    }
  });

  it('refuses cluster-wide keys of the wrong type with EMQ_WRONGTYPE, writing nothing (a private server)', async () => {
    const v = await startEmbeddedValkey();
    const raw = new Redis(v.url, { maxRetriesPerRequest: 1 });
    const c = raw as unknown as ScriptClient;
    try {
      await raw.set(globalKeys.nodes, 'x');
      await expect(wire.node(c, 'a', 60_000)).rejects.toMatchObject({ code: 'EMQ_WRONGTYPE' });
      await expect(wire.node(c, 'a', 60_000, 3)).rejects.toMatchObject({ code: 'EMQ_WRONGTYPE' });
      expect(await raw.exists(globalKeys.nodeSeq)).toBe(0);
      await raw.del(globalKeys.nodes);
      await raw.set(globalKeys.nodeSeq, 'abc');
      await expect(wire.node(c, 'a', 60_000)).rejects.toMatchObject({ code: 'EMQ_WRONGTYPE' });
      expect([await raw.get(globalKeys.nodeSeq), await raw.exists(globalKeys.nodes)]).toEqual(['abc', 0]);
      await raw.del(globalKeys.nodeSeq);
      await raw.hset(globalKeys.nodeSeq, 'f', 'v');
      await expect(wire.node(c, 'a', 60_000)).rejects.toMatchObject({ code: 'EMQ_WRONGTYPE' });
      expect(await raw.exists(globalKeys.nodes)).toBe(0);
    } finally {
      raw.disconnect();
      await v.stop();
    }
  });
});
