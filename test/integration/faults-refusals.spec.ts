/**
 * Issue 7 #20: every refusal Valkey makes reaches the caller as a typed EchoMqError with a stable
 * code, the server's text and the original reply as its cause — from scripts, from raw commands
 * (the client maps every reply) and at startup (node.lua). Each case is a real server condition.
 */
import { Redis } from 'iovalkey';
import { EchoMqConnection, connectClient, createClient, type ValkeyClient } from '../../src/core/connection/connection.js';
import { EchoMqError } from '../../src/core/errors.js';
import { QueueService } from '../../src/queue/queue-service.js';
import { startEmbeddedValkey, type EmbeddedValkey } from '../../src/core/embedded-valkey.js';
import { aclUser } from '../helpers/acl.js';
import { eventually, randomQueue } from '../helpers/valkey.js';

/** The error `act` fails with; fails the test if it resolves or throws something untyped. */
async function refusal(act: () => Promise<unknown>): Promise<EchoMqError> {
  const err = await act().then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof EchoMqError)) throw new Error(`expected an EchoMqError, got ${err === undefined ? 'success' : String(err)}`);
  return err;
}

describe('server refusals are typed', () => {
  let main: EmbeddedValkey;
  const others: EmbeddedValkey[] = [];
  let raw: Redis;
  let conn: EchoMqConnection;
  let queues: QueueService;
  const clients: ValkeyClient[] = [];

  beforeAll(async () => {
    main = await startEmbeddedValkey({ args: ['--busy-reply-threshold', '100'] });
    raw = new Redis({ port: main.port });
    conn = new EchoMqConnection({ port: main.port });
    await conn.open();
    queues = new QueueService(conn);
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await conn.close();
    raw.disconnect();
    for (const s of [main, ...others]) await s.stop();
  });

  /** A plain EchoMQ client (typed replies) on `port`, connected. */
  async function plainClient(port: number, extra: { username?: string; password?: string } = {}): Promise<ValkeyClient> {
    const c = createClient({ port, connectTimeoutMs: 2000, ...extra });
    clients.push(c);
    await connectClient(c);
    return c;
  }

  it('OOM: maxmemory reached under noeviction → EMQ_OOM, from a script and from a raw command', async () => {
    const used = Number(/used_memory:(\d+)/.exec(await raw.info('memory'))?.[1]);
    await raw.config('SET', 'maxmemory', String(used + 1024 * 1024));
    try {
      // Filler until the server refuses writes.
      const filler = 'x'.repeat(64 * 1024);
      for (let i = 0; i < 100; i++) {
        const ok = await raw.set(`filler:${i}`, filler).then(
          () => true,
          () => false,
        );
        if (!ok) break;
      }
      const q = randomQueue('oom');
      const err = await refusal(() => queues.enqueue(q, { big: 'y'.repeat(100_000) }));
      expect(err.code).toBe('EMQ_OOM');
      expect(err.name).toBe('OutOfMemoryError');
      expect(err.message).toMatch(/^OOM command not allowed when used memory > 'maxmemory'/);
      expect(err.cause).toBeInstanceOf(Error);
      const rawErr = await refusal(() => conn.client.set('filler:more', filler));
      expect([rawErr.code, rawErr.message.slice(0, 3)]).toEqual(['EMQ_OOM', 'OOM']);
    } finally {
      await raw.config('SET', 'maxmemory', '0');
      await raw.flushall();
    }
  });

  it('NOPERM: a key outside the grant, and TIME denied inside a script (ERR ACL failure in script) → EMQ_NOPERM, at startup too', async () => {
    const noTime = await aclUser(raw, ['~*', '&*', '+@all', '-time']);
    // node.lua reads TIME: the connection cannot even start.
    const c = new EchoMqConnection({ port: main.port, username: noTime.username, password: noTime.password });
    const atStartup = await refusal(() => c.open());
    await c.close();
    expect(atStartup.code).toBe('EMQ_NOPERM');
    expect(atStartup.message).toMatch(/^ERR ACL failure in script: .*'time' command/);

    const onlyOrders = await aclUser(raw, ['~emq:{orders}:*', '-@all', '+@read']);
    const c2 = await plainClient(main.port, { username: onlyOrders.username, password: onlyOrders.password });
    const key = await refusal(() => c2.get('emq:{billing}:meta'));
    expect([key.code, key.name, key.message]).toEqual(['EMQ_NOPERM', 'PermissionDeniedError', 'NOPERM No permissions to access a key']);
    const cmd = await refusal(() => c2.set('emq:{orders}:x', '1'));
    expect(cmd.code).toBe('EMQ_NOPERM');
    expect(cmd.message).toMatch(/^NOPERM User .* has no permissions to run the 'set' command/);
    await noTime.drop();
    await onlyOrders.drop();
  });

  it('AUTH: a wrong password (WRONGPASS) and no password where one is required (NOAUTH) → EMQ_AUTH', async () => {
    const user = await aclUser(raw, ['~*', '+@all']);
    const wrong = new EchoMqConnection({ port: main.port, username: user.username, password: 'not-the-password', connectTimeoutMs: 2000 });
    const err = await refusal(() => wrong.open());
    await wrong.close();
    expect([err.code, err.name]).toEqual(['EMQ_AUTH', 'AuthenticationError']);
    expect(err.message).toMatch(/WRONGPASS/);
    await user.drop();

    const locked = await startEmbeddedValkey();
    others.push(locked);
    const setup = new Redis({ port: locked.port });
    await setup.config('SET', 'requirepass', 'secret');
    setup.disconnect();
    const anon = new EchoMqConnection({ port: locked.port, connectTimeoutMs: 2000 });
    const noauth = await refusal(() => anon.open());
    await anon.close();
    expect(noauth.code).toBe('EMQ_AUTH');
    expect(noauth.message).toMatch(/^NOAUTH/);
  });

  it('READONLY: a connection to a replica fails at startup (node.lua writes) and on raw writes → EMQ_READONLY', async () => {
    const replica = await startEmbeddedValkey({ args: ['--replicaof', '127.0.0.1', String(main.port)] });
    others.push(replica);
    const r = await plainClient(replica.port);
    await eventually(async () => /master_link_status:up/.test(await r.info('replication')), 10_000, 'the replica to sync');
    const c = new EchoMqConnection({ port: replica.port });
    const atStartup = await refusal(() => c.open());
    await c.close();
    expect([atStartup.code, atStartup.name]).toEqual(['EMQ_READONLY', 'ReadOnlyError']);
    expect(atStartup.message).toMatch(/^READONLY You can't write against a read only replica/);
    const write = await refusal(() => r.set('k', 'v'));
    expect(write.code).toBe('EMQ_READONLY');
  });

  it('BUSY: a script running past busy-reply-threshold → EMQ_BUSY', async () => {
    const other = new Redis({ port: main.port });
    // Another client's script spins for 1 s; meanwhile the server answers BUSY to everything else.
    const spin = other.eval('local s = os.clock() while os.clock() - s < 1 do end return 1', 0);
    await new Promise((r) => setTimeout(r, 300));
    const err = await refusal(() => queues.enqueue(randomQueue('busy'), { n: 1 }));
    expect([err.code, err.name]).toEqual(['EMQ_BUSY', 'ServerBusyError']);
    expect(err.message).toMatch(/^BUSY /);
    await spin;
    other.disconnect();
  });

  it('WRONGTYPE from a raw command, and an unknown error → EMQ_WRONGTYPE, EMQ_INTERNAL with the server text', async () => {
    await raw.set('emq:{wt}:meta', 'not a hash');
    const wt = await refusal(() => conn.client.hget('emq:{wt}:meta', 'v'));
    expect([wt.code, wt.name]).toEqual(['EMQ_WRONGTYPE', 'WrongTypeError']);
    expect(wt.message).toBe('WRONGTYPE Operation against a key holding the wrong kind of value');
    const unknown = await refusal(() => conn.client.call('NO-SUCH-COMMAND'));
    expect(unknown.code).toBe('EMQ_INTERNAL');
    expect(unknown.message).toMatch(/^ERR unknown command/);
    // In a pipeline too.
    const replies = (await conn.client.pipeline().hget('emq:{wt}:meta', 'v').get('emq:{wt}:meta').exec()) ?? [];
    expect((replies[0][0] as EchoMqError).code).toBe('EMQ_WRONGTYPE');
    expect(replies[1]).toEqual([null, 'not a hash']);
  });

  it('a server that is gone → EMQ_UNAVAILABLE', async () => {
    const gone = await startEmbeddedValkey();
    const c = new EchoMqConnection({ port: gone.port, connectTimeoutMs: 1000, commandTimeoutMs: 1000 });
    await c.open();
    await gone.stop();
    const err = await refusal(() => new QueueService(c).enqueue(randomQueue('gone'), { n: 1 }));
    expect(err.code).toBe('EMQ_UNAVAILABLE');
    await c.close();
  });
});
